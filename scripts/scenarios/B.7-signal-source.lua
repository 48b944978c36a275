-- title: Signal source for SIGUSR1
-- seed: 004 (22.10.1 Dispatch sources: signals)
-- expect: 4 checks, 0.3 s of delays
--
-- The chapter's signal source (its listing is a picture): a
-- DISPATCH_SOURCE_TYPE_SIGNAL source for SIGUSR1 whose handler prints on the
-- main queue, SIG_IGN so that the default action does not kill the process,
-- dispatch_resume, then dispatch_main(); the signal is sent from a shell with
-- kill -USR1 <pid>.
--
-- Here the script sends the signals to itself with dispatch.kill, one at a
-- time: the first from the registration handler (once the source is
-- listening), each next one from the event handler. The runtime takes care of
-- the signal's disposition. After three signals the source is cancelled so
-- that the script ends.

local dispatch = require("dispatch")
local scenario = require("scenario")

local SIGNALS = 3
local handled, delivered, offMain = 0, 0, 0
local source

source = dispatch.source.signal{
  signal = "SIGUSR1",
  queue = dispatch.main,
  registration_handler = function()
    print("source registered; sending SIGUSR1 to pid " .. dispatch.pid())
    dispatch.kill(dispatch.pid(), "SIGUSR1")
  end,
  handler = function()
    handled = handled + 1
    delivered = delivered + source.data
    if not dispatch.thread().is_main then offMain = offMain + 1 end
    print(string.format("got SIGUSR1 (handler run %d, deliveries %d) on %s",
      handled, source.data, tostring(dispatch.thread())))
    if handled < SIGNALS then
      dispatch.main:after(scenario.delay(0.1), function()
        dispatch.kill(dispatch.pid(), "SIGUSR1")
      end)
    else
      source:cancel()
    end
  end,
  cancel_handler = function()
    print("signal source cancelled")
    scenario.check(handled == SIGNALS, "the handler ran once per signal (" .. SIGNALS .. " signals)")
    scenario.check(delivered == SIGNALS, "the source counted " .. SIGNALS .. " deliveries")
    scenario.check(offMain == 0, "the handler runs on the main queue")
    scenario.check(source:is_cancelled(), "the source reports it is cancelled")
  end,
}

print("signal source for SIGUSR1 created (suspended); resuming it")
source:resume()
