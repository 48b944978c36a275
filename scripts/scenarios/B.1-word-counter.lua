-- title: WordCounter: count words in the background, update the UI on main
-- seed: 004 (22.5 WordCounter)
-- expect: 8 checks, 4.5 s of delays
--
-- The chapter's WordCounter app counts the words of a text view and how many
-- distinct words there are (an NSCountedSet), with a 2 s sleep to stand for
-- lots of work. First version: everything in the button's action, on the
-- main thread, so the UI freezes. GCD version:
--
--   - (IBAction) count: (id) sender {
--       [self disableEverything];                     // main thread
--       dispatch_async(dispatch_get_global_queue(DISPATCH_QUEUE_PRIORITY_DEFAULT, 0), ^{
--           [self getWordCount: &count addFrequencies: frequencies forString: string];
--           dispatch_async(dispatch_get_main_queue(), ^{
--               // set the two labels
--               [self enableEverything];
--           });
--       });
--   }
--
-- There is no window here. The "UI" is a table (text, labels, button,
-- spinner) that may only be touched on the main thread, which every UI
-- function checks; a "heartbeat" on the main queue shows whether the UI
-- would still respond while the count runs.
--
-- A word is a maximal run of ASCII letters, digits and apostrophes; distinct
-- words are compared in lower case. The bundled text (data/words.txt, written
-- for this project) has EXPECTED_WORDS words and EXPECTED_DISTINCT distinct
-- ones, computed once with Python:
--   w = re.findall(r"[A-Za-z0-9']+", text); len(w), len({x.lower() for x in w})
local EXPECTED_WORDS, EXPECTED_DISTINCT = 2908, 714

local dispatch = require("dispatch")
local scenario = require("scenario")

local function readAll(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- The window.
local ui = {
  textView = readAll(scenario.data("words.txt")),
  countLabel = "", uniqueLabel = "",
  buttonEnabled = true, textEditable = true, spinning = false,
}
local uiOffMain = 0
local function onMain()
  if not dispatch.thread().is_main then uiOffMain = uiOffMain + 1 end
end

local function disableEverything()
  onMain()
  ui.buttonEnabled, ui.textEditable, ui.spinning = false, false, true
  print("UI: button and text disabled, spinner started")
end

local function enableEverything()
  onMain()
  ui.buttonEnabled, ui.textEditable, ui.spinning = true, true, false
  print("UI: button and text enabled, spinner stopped")
end

local function setLabels(count, frequencies)
  onMain()
  local distinct = 0
  for _ in pairs(frequencies) do distinct = distinct + 1 end
  ui.countLabel = tostring(count)
  ui.uniqueLabel = tostring(distinct)
  print("UI: word count label = " .. ui.countLabel .. ", unique words label = " .. ui.uniqueLabel)
  return distinct
end

-- -getWordCount:addFrequencies:forString: the heavy part.
local function getWordCount(frequencies, text)
  local count = 0
  for word in text:gmatch("[%w']+") do
    count = count + 1
    local w = word:lower()
    frequencies[w] = (frequencies[w] or 0) + 1   -- NSCountedSet addObject:
  end
  dispatch.sleep(scenario.delay(2))                -- "lots of work"
  return count
end

-- Version 1: the whole count in the action, on the main thread. The main
-- thread (and so the UI) is blocked for the whole count.
local serialFrequencies = {}
local t0 = dispatch.now()
local serialCount = getWordCount(serialFrequencies, ui.textView)
local blocked = dispatch.now() - t0
local serialDistinct = 0
for _ in pairs(serialFrequencies) do serialDistinct = serialDistinct + 1 end
print(string.format("version 1 (on the main thread): %d words, %d distinct; the UI was frozen for %.2f s",
  serialCount, serialDistinct, blocked))
scenario.check(serialCount == EXPECTED_WORDS and serialDistinct == EXPECTED_DISTINCT,
  "a plain serial count of the bundled text gives the expected numbers")

-- Version 2: the GCD version, driven by a "click" delivered on the main queue.
local heartbeats, counting = 0, false
local function heartbeat()
  if not counting then return end
  heartbeats = heartbeats + 1
  print("main queue heartbeat: the UI still responds")
  dispatch.main:after(scenario.delay(0.5), heartbeat)
end

local function count(sender)                      -- the IBAction, on main
  onMain()
  print("click on " .. sender .. " handled on " .. tostring(dispatch.thread()))
  disableEverything()
  counting = true
  dispatch.main:after(scenario.delay(0.5), heartbeat)

  dispatch.global("default"):async(function()
    local t = dispatch.thread()
    print("counting on " .. tostring(t))
    scenario.check(not t.is_main, "the count runs off the main thread")
    local frequencies = {}
    local n = getWordCount(frequencies, ui.textView)

    dispatch.main:async(function()
      counting = false
      local distinct = setLabels(n, frequencies)
      enableEverything()
      scenario.check(n == EXPECTED_WORDS, "word count correct for the bundled text (" .. EXPECTED_WORDS .. ")")
      scenario.check(distinct == EXPECTED_DISTINCT, "distinct word count correct for the bundled text (" .. EXPECTED_DISTINCT .. ")")
      scenario.check(n == serialCount and distinct == serialDistinct, "background count equals the plain serial count")
      scenario.check(uiOffMain == 0, "every UI update happens on the main thread")
      scenario.check(heartbeats >= 1, "the main queue kept running while the count was in the background")
      scenario.check(ui.buttonEnabled and not ui.spinning, "the UI is enabled again at the end")
    end)
  end)
  print("action returned; the main thread goes back to its run loop")
end

dispatch.main:async(function() count("Count!") end)
