import Foundation
import Synchronization
import XCTest
@testable import LuaDispatch

/// A Swift class exposed to Lua: methods, properties, metamethods.
final class Account: LuaUserData {
    private let state: Mutex<(owner: String, balance: Int)>
    let id: Int
    let closed = Atomic<Bool>(false)

    init(owner: String, balance: Int = 0, id: Int = 0) {
        state = Mutex((owner, balance))
        self.id = id
    }

    var owner: String {
        get { state.withLock { $0.owner } }
        set { state.withLock { $0.owner = newValue } }
    }
    var balance: Int { state.withLock { $0.balance } }

    func deposit(_ n: Int) throws -> Int {
        guard n > 0 else { throw LuaError.message("deposit: amount must be positive") }
        return state.withLock { $0.balance += n; return $0.balance }
    }

    static let luaType = LuaType<Account>("Account") { t in
        t.method("deposit") { (a: Account, n: Int) throws -> Int in try a.deposit(n) }
        t.method("transfer") { (a: Account, to: Account, n: Int) throws in
            _ = try to.deposit(n)
            a.state.withLock { $0.balance -= n }
        }
        t.method("twin") { (a: Account) -> Account in a }
        t.property("owner", get: { $0.owner }, set: { $0.owner = $1 })
        t.property("balance", get: { $0.balance })
        t.property("id", get: \.id)
        t.metamethod(.tostring) { (a: Account) in "Account(\(a.owner): \(a.balance))" }
        t.metamethod(.len) { (a: Account) in a.balance }
        t.metamethod(.eq) { (a: Account, b: Account) in a.id == b.id }
        t.metamethod(.lt) { (a: Account, b: Account) in a.balance < b.balance }
        t.metamethod(.close) { (a: Account) in a.closed.store(true, ordering: .relaxed) }
        t.metamethod(.call) { (a: Account, prefix: String) in prefix + a.owner }
        t.metamethod(.concat) { (a: LuaValue, b: LuaValue) in "\(a.luaTypeName)..\(b.luaTypeName)" }
    }
}

/// A second type, for type checks between host types.
final class Ledger: LuaUserData {
    static let luaType = LuaType<Ledger>("Ledger") { t in
        t.method("size") { (_: Ledger) in 0 }
    }
}

final class UserDataTests: XCTestCase {
    private func runtime(_ objects: [String: any LuaUserData] = [:]) -> Runtime {
        let rt = TestRuntimes.make()
        rt.register(module: "host") { m in
            for (name, o) in objects { m.value(name, LuaValue.object(o)) }
            m.function("open") { (owner: String, balance: Int) in Account(owner: owner, balance: balance) }
            m.function("same") { (a: Account, b: Account) in a === b }
            m.function("ledger") { () in Ledger() }
        }
        return rt
    }

    func testMethodsPropertiesAndMetamethods() throws {
        let alice = Account(owner: "alice", balance: 10, id: 1)
        let rt = runtime(["alice": alice])
        defer { rt.close() }
        XCTAssertEqual(try rt.run(string: """
            local host = require('host')
            local a, b = host.alice, host.open("bob", 5)
            local after = a:deposit(5)
            a:transfer(b, 3)
            a.owner = "alice2"
            local closed
            do local c <close> = b end
            return after, a.balance, b.balance, a.owner, tostring(a), #b, a < b, b < a, a("hi "), a .. 1, 1 .. a, a.id, a.nothing
            """), [15, 12, 8, "alice2", "Account(alice2: 12)", 8, false, true, "hi alice2", "Account..number", "number..Account", 1, .nil])
        XCTAssertEqual(alice.owner, "alice2")
        XCTAssertEqual(alice.balance, 12)
    }

    func testErrorsNameTheTypeAndTheProperty() throws {
        let rt = runtime(["alice": Account(owner: "alice")])
        defer { rt.close() }
        func message(_ code: String) -> String? {
            try? rt.run(string: "local host = require('host'); local a = host.alice; return select(2, pcall(function() \(code) end))",
                        name: "=t").first?.stringValue
        }
        XCTAssertEqual(message("return a.deposit({}, 1)"), "t:1: bad argument #1 to 'deposit' (Account expected, got table)")
        XCTAssertEqual(message("return a.deposit(host.ledger(), 1)"), "t:1: bad argument #1 to 'deposit' (Account expected, got Ledger)")
        XCTAssertEqual(message("return a.deposit(require('dispatch').queue('q'), 1)"),
                       "t:1: bad argument #1 to 'deposit' (Account expected, got dispatch.queue)")
        XCTAssertEqual(message("return a:deposit('x')"), "t:1: bad argument #2 to 'deposit' (number expected, got string)")
        XCTAssertEqual(message("return a:deposit(-1)"), "t:1: deposit: amount must be positive")
        XCTAssertEqual(message("return a:transfer({}, 1)"), "t:1: bad argument #2 to 'transfer' (Account expected, got table)")
        XCTAssertEqual(message("a.balance = 3"), "t:1: property 'balance' of Account is read-only")
        XCTAssertEqual(message("a.colour = 'red'"), "t:1: Account has no property 'colour'")
        XCTAssertEqual(message("a[1] = 'red'"), "t:1: cannot set a number key on Account")
        XCTAssertEqual(message("a.owner = 42"), "t:1: bad value for property 'owner' of Account (string expected, got number)")
        XCTAssertEqual(try rt.run(string: "return getmetatable(require('host').alice)"), ["locked"])
        XCTAssertEqual(message("return a < host.ledger()"), "t:1: bad argument #2 to '__lt' (Account expected, got Ledger)")
    }

    /// The same object is the same userdata each time, and comes back as the same object.
    func testIdentityIsKeptBothWays() throws {
        let alice = Account(owner: "alice", id: 1)
        let rt = runtime(["alice": alice, "again": alice])
        defer { rt.close() }
        let twin = try rt.makeFunction("identity") { (a: Account) in a }
        XCTAssertEqual(try rt.run(string: """
            local host = require('host')
            local t = {[host.alice] = 'key'}
            local a = host.open('x', 1)
            return rawequal(host.alice, host.again), t[host.again], rawequal(host.alice:twin(), host.alice),
                   host.same(host.alice, host.again), host.same(a, a:twin()), host.same(host.alice, a)
            """), [true, "key", true, true, true, false])
        XCTAssertTrue(try twin.call(alice, returning: Account.self) === alice)
        let back = try rt.run(string: "return require('host').alice")
        XCTAssertTrue(back.first?.object(as: Account.self) === alice)
        XCTAssertEqual(back.first, .object(alice))
        // Equal by __eq, different userdata.
        let copy = Account(owner: "copy", id: 1)
        XCTAssertEqual(try rt.load("local a, b = ...; return a == b, rawequal(a, b)").call(alice, copy), [true, false])
    }

    /// Lua collects its userdata while Swift still holds the object: the object lives on, and
    /// pushed again it gets a new userdata.
    func testCollectedByLuaWhileSwiftHoldsIt() throws {
        let rt = runtime()
        defer { rt.close() }
        let account = Account(owner: "kept")
        let probe = try rt.load("""
            local a = ...
            weak = setmetatable({a}, {__mode = 'v'})
            """)
        try probe.call(account)
        XCTAssertEqual(try rt.load("collectgarbage(); collectgarbage(); return #weak").call(), [0])
        XCTAssertEqual(account.owner, "kept")
        XCTAssertEqual(try rt.load("local a = ...; return a.owner").call(account), ["kept"])
    }

    /// Swift drops the object while Lua holds it: it lives until Lua collects its userdata.
    func testSwiftDropsItWhileLuaHoldsIt() throws {
        let rt = runtime()
        defer { rt.close() }
        weak var weakAccount: Account?
        do {
            let account = Account(owner: "held by Lua")
            weakAccount = account
            try rt.load("held = ...").call(account)
        }
        XCTAssertNotNil(weakAccount)
        XCTAssertEqual(try rt.run(string: "collectgarbage(); collectgarbage(); return held.owner"), ["held by Lua"])
        XCTAssertNotNil(weakAccount)
        try rt.run(string: "held = nil; collectgarbage(); collectgarbage()")
        XCTAssertNil(weakAccount, "the object outlived its last userdata")
    }

    /// Each interpreter has its own userdata for an object; one collecting it does not affect
    /// the other, and closing an interpreter releases what it held.
    func testTwoInterpretersHoldTheSameObject() throws {
        let a = runtime(), b = runtime()
        defer { b.close() }
        weak var weakAccount: Account?
        do {
            let account = Account(owner: "shared")
            weakAccount = account
            try a.load("x = ...").call(account)
            try b.load("x = ...").call(account)
        }
        try a.run(string: "x = nil; collectgarbage(); collectgarbage()")
        XCTAssertEqual(try b.run(string: "return x.owner"), ["shared"])
        b.close()
        XCTAssertNil(weakAccount)
        a.close()
    }

    /// Methods of one object called by blocks on a concurrent queue and by Swift at the same time.
    func testMethodsRunFromManyThreads() throws {
        let account = Account(owner: "busy")
        let run = runLua("""
            local host = require('host')
            local g = dispatch.group()
            local q = dispatch.queue{label = 'accounts', concurrent = true}
            for i = 1, 200 do q:async(function() host.account:deposit(1) end, {group = g}) end
            g:wait()
            t.record(host.account.balance)
            """, setup: { rt in rt.register(module: "host") { m in m.value("account", account) } })
        assertClean(run)
        XCTAssertEqual(run.ints, [200])
    }
}
