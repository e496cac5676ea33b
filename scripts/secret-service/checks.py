"""What the Secret Service client scripts share: the service's address, a check that prints a line and exits 1
when it fails, and waiting for one signal."""
import sys

from jeepney import DBusAddress, HeaderFields, MatchRule, message_bus

SERVICE = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets",
                      interface="org.freedesktop.Secret.Service")


def check(what, ok):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        sys.exit(1)


def signal_after(bus, collection_path, action):
    """The member and first argument of the first signal of the collection at `collection_path` heard after
    `action()` runs (within 5 s)."""
    rule = MatchRule(type="signal", interface="org.freedesktop.Secret.Collection", path=collection_path)
    bus.send_and_get_reply(message_bus.AddMatch(rule))
    with bus.filter(rule) as heard:
        action()
        signal = bus.recv_until_filtered(heard, timeout=5)
    return signal.header.fields[HeaderFields.member], signal.body[0]
