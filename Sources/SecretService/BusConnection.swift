import CSystemd

#if canImport(Glibc)
    import Glibc
#endif

/// A method call received on a served path.
package struct BusCall: Sendable {
    /// The caller's unique bus name (`:1.42`): who owns the sessions it opens.
    package let sender: String
    package let path: String
    package let interface: String
    package let member: String
    package let arguments: [BusValue]
}

/// A connection to a D-Bus bus through sd-bus, driven by one thread (sd-bus is not thread-safe): the one
/// that calls ``process(timeout:)`` and ``call(destination:path:interface:member:_:timeout:)``.
package final class BusConnection {
    private let bus: OpaquePointer
    /// The handlers given to sd-bus as user data, kept alive as long as the connection.
    private var handlers: [Handler] = []
    private var slots: [OpaquePointer?] = []

    private final class Handler {
        let body: (BusCall) -> Result<[BusValue], SecretServiceError>
        let signal: ((BusCall) -> Void)?
        init(_ body: @escaping (BusCall) -> Result<[BusValue], SecretServiceError>, signal: ((BusCall) -> Void)? = nil)
        {
            self.body = body
            self.signal = signal
        }
    }

    /// Connects to the bus at `address` (a D-Bus address), or to the user's session bus if nil
    /// (`DBUS_SESSION_BUS_ADDRESS`, else the user's runtime directory).
    package init(address: String? = nil) throws(SecretServiceError) {
        var b: OpaquePointer?
        var r: Int32
        if let address {
            r = sd_bus_new(&b)
            if r >= 0 { r = sd_bus_set_address(b, address) }
            if r >= 0 { r = sd_bus_set_bus_client(b, 1) }
            if r >= 0 { r = sd_bus_start(b) }
        } else {
            r = sd_bus_open_user(&b)
        }
        guard r >= 0, let b else {
            if let b { sd_bus_unref(b) }
            throw .failed("cannot connect to the session bus: \(String(cString: strerror(-r)))")
        }
        bus = b
    }

    deinit {
        for s in slots { sd_bus_slot_unref(s) }
        sd_bus_flush_close_unref(bus)
    }

    /// This connection's unique name.
    package var uniqueName: String {
        var p: UnsafePointer<CChar>?
        guard sd_bus_get_unique_name(bus, &p) >= 0, let p else { return "" }
        return String(cString: p)
    }

    /// Takes the well-known `name`: with `replace`, from a current owner that allows it (as
    /// `gnome-keyring-daemon --replace` does); the name may in turn be taken by a later `--replace`.
    package func requestName(_ name: String, replace: Bool) throws(SecretServiceError) {
        var flags = UInt64(SD_BUS_NAME_ALLOW_REPLACEMENT)
        if replace { flags |= UInt64(SD_BUS_NAME_REPLACE_EXISTING) }
        let r = sd_bus_request_name(bus, name, flags)
        guard r >= 0 else {
            throw r == -EEXIST
                ? SecretServiceError(
                    SecretServiceError.nameTaken,
                    "\(name) is owned by another program on the bus (--replace takes it over)")
                : .failed("cannot own \(name): \(String(cString: strerror(-r)))")
        }
    }

    /// Serves every method call to `prefix` and the paths below it: `body` returns the reply's values or an
    /// error, which is sent back.
    package func serve(prefix: String, _ body: @escaping (BusCall) -> Result<[BusValue], SecretServiceError>)
        throws(SecretServiceError)
    {
        let handler = Handler(body)
        var slot: OpaquePointer?
        let r = sd_bus_add_fallback(
            bus, &slot, prefix,
            { m, userdata, _ in
                guard let m, let userdata, sd_bus_message_is_method_call(m, nil, nil) > 0 else { return 0 }
                let handler = Unmanaged<Handler>.fromOpaque(userdata).takeUnretainedValue()
                let result: Result<[BusValue], SecretServiceError>
                do throws(SecretServiceError) {
                    result = handler.body(try BusConnection.call(m))
                } catch {
                    result = .failure(error)
                }
                BusConnection.reply(to: m, result)
                return 1
            }, Unmanaged.passUnretained(handler).toOpaque())
        guard r >= 0 else { throw .failed("cannot serve \(prefix): \(String(cString: strerror(-r)))") }
        handlers.append(handler)
        slots.append(slot)
    }

    /// Hands `body` every signal that `match` (a D-Bus match rule) selects.
    package func watch(_ match: String, _ body: @escaping (BusCall) -> Void) throws(SecretServiceError) {
        let handler = Handler({ _ in .success([]) }, signal: body)
        var slot: OpaquePointer?
        let r = sd_bus_add_match(
            bus, &slot, match,
            { m, userdata, _ in
                guard let m, let userdata, let call = try? BusConnection.call(m) else { return 0 }
                Unmanaged<Handler>.fromOpaque(userdata).takeUnretainedValue().signal?(call)
                return 0
            }, Unmanaged.passUnretained(handler).toOpaque())
        guard r >= 0 else { throw .failed("cannot watch \(match): \(String(cString: strerror(-r)))") }
        handlers.append(handler)
        slots.append(slot)
    }

    /// Emits a signal from `path`.
    package func emit(path: String, interface: String, member: String, _ values: [BusValue])
        throws(SecretServiceError)
    {
        var m: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &m, path, interface, member) >= 0, let m else {
            throw .failed("cannot make the signal \(member)")
        }
        defer { sd_bus_message_unref(m) }
        for v in values { try BusCodec.append(m, v) }
        guard sd_bus_send(bus, m, nil) >= 0 else { throw .failed("cannot send the signal \(member)") }
    }

    /// Handles what has arrived, then waits at most `timeout` seconds for more.
    package func process(timeout: Double) throws(SecretServiceError) {
        while true {
            let r = sd_bus_process(bus, nil)
            guard r >= 0 else { throw .failed("the bus connection failed: \(String(cString: strerror(-r)))") }
            if r == 0 { break }
        }
        let w = sd_bus_wait(bus, UInt64(max(timeout, 0) * 1_000_000))
        guard w >= 0 || w == -EINTR else {
            throw .failed("the bus connection failed: \(String(cString: strerror(-w)))")
        }
    }

    /// Calls a method and returns its reply's values, or throws the error it replied.
    package func call(
        destination: String, path: String, interface: String, member: String, _ arguments: [BusValue],
        timeout: Double = 25
    ) throws(SecretServiceError) -> [BusValue] {
        var m: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &m, destination, path, interface, member) >= 0, let m else {
            throw .failed("cannot make the call \(member)")
        }
        defer { sd_bus_message_unref(m) }
        for a in arguments { try BusCodec.append(m, a) }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        let r = sd_bus_call(bus, m, UInt64(timeout * 1_000_000), &error, &reply)
        guard r >= 0, let reply else {
            let name = error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
            let message = error.message.map { String(cString: $0) } ?? String(cString: strerror(-r))
            throw SecretServiceError(name, message)
        }
        defer { sd_bus_message_unref(reply) }
        return try BusCodec.readAll(reply)
    }

    private static func call(_ m: OpaquePointer) throws(SecretServiceError) -> BusCall {
        func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
        let sender = text(sd_bus_message_get_sender(m))
        let path = text(sd_bus_message_get_path(m))
        let interface = text(sd_bus_message_get_interface(m))
        let member = text(sd_bus_message_get_member(m))
        return BusCall(
            sender: sender, path: path, interface: interface, member: member, arguments: try BusCodec.readAll(m))
    }

    private static func reply(to m: OpaquePointer, _ result: Result<[BusValue], SecretServiceError>) {
        var values: [BusValue] = []
        var failure: SecretServiceError?
        switch result {
        case .success(let v): values = v
        case .failure(let e): failure = e
        }
        if failure == nil {
            var reply: OpaquePointer?
            if sd_bus_message_new_method_return(m, &reply) >= 0, let reply {
                defer { sd_bus_message_unref(reply) }
                do throws(SecretServiceError) {
                    for v in values { try BusCodec.append(reply, v) }
                    if sd_bus_send(nil, reply, nil) >= 0 { return }
                    failure = .failed("the reply could not be sent")
                } catch {
                    failure = error
                }
            } else {
                failure = .failed("no reply could be made")
            }
        }
        guard let failure else { return }
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        _ = sd_bus_error_set(&error, failure.name, failure.message)
        _ = sd_bus_reply_method_error(m, &error)
    }
}
