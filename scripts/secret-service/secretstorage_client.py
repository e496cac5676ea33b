#!/usr/bin/python3
"""A Secret Service client over python3-secretstorage (jeepney), run by SecretServiceCLITests against kcar
secret-service and, unchanged, against gnome-keyring-daemon (the reference).

It uses the session bus of DBUS_SESSION_BUS_ADDRESS and prints one line per check; it exits 1 at the first
check that fails. secretstorage opens the encrypted session (dh-ietf1024-sha256-aes128-cbc-pkcs7) unless it
cannot, so the secrets below cross the bus encrypted, but for the one read through a plain session. It also
reads and sets the default alias and hears another client's (secret-tool's) item signalled.
"""
import subprocess

import secretstorage
from jeepney import DBusAddress, new_method_call
from secretstorage.exceptions import ItemNotFoundException

from checks import SERVICE, check, signal_after


bus = secretstorage.dbus_init()
collection = secretstorage.get_default_collection(bus)
check("the default collection is unlocked", not collection.is_locked())
session = secretstorage.util.open_session(bus)
check("the session is dh-ietf1024-sha256-aes128-cbc-pkcs7", session.encrypted)

attributes = {"application": "kcar-test", "user": "carol"}
collection.session = session
item = collection.create_item("Carol's token", attributes, b"s3cr3t \x00\xff bytes", replace=False)
check("create_item returns an item with its label", item.get_label() == "Carol's token")
check("the secret reads back byte for byte", item.get_secret() == b"s3cr3t \x00\xff bytes")
# A service may add a schema to an item stored without one (gnome-keyring and kcar add the generic one).
stored = item.get_attributes()
check("its attributes read back", {k: v for k, v in stored.items() if k != "xdg:schema"} == attributes)

found = list(collection.search_items({"user": "carol"}))
check("search_items finds it", [f.item_path for f in found] == [item.item_path])
check("a search that does not match finds nothing", list(collection.search_items({"user": "dave"})) == [])
everywhere = list(secretstorage.search_items(bus, {"application": "kcar-test"}))
check("the service's search finds it", [f.item_path for f in everywhere] == [item.item_path])

same = collection.create_item("Carol's token", attributes, b"rotated", replace=True)
check("replace changes the same item", same.item_path == item.item_path and item.get_secret() == b"rotated")

item.set_label("renamed")
item.set_attributes({"application": "kcar-test", "user": "erin"})
check("label and attributes change", item.get_label() == "renamed" and item.get_attributes().get("user") == "erin")
item.set_secret(b"third")
check("set_secret changes the value", item.get_secret() == b"third")
check("created and modified are set", item.get_created() > 0 and item.get_modified() >= item.get_created())

labels = [c.get_label() for c in secretstorage.get_all_collections(bus)]
check("the collections include the default one", collection.get_label() in labels)

# The plain session: the secret crosses the bus as it is.
plain = bus.send_and_get_reply(new_method_call(SERVICE, "OpenSession", "sv", ("plain", ("s", "")))).body[1]
got = bus.send_and_get_reply(new_method_call(
    DBusAddress(item.item_path, bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Item"),
    "GetSecret", "o", (plain,))).body[0]
check("a plain session's secret is the value itself", got[0] == plain and got[1] == b"" and got[2] == b"third")

# The default alias: read, and set to the collection it names (what a client that picks a default does).
# (secretstorage's default collection is at the alias path, /org/freedesktop/secrets/aliases/default.)
def read_alias():
    return bus.send_and_get_reply(new_method_call(SERVICE, "ReadAlias", "s", ("default",))).body[0]


default = read_alias()
check("ReadAlias names the default collection",
      secretstorage.Collection(bus, default).get_label() == collection.get_label())
reply = bus.send_and_get_reply(new_method_call(SERVICE, "SetAlias", "so", ("default", default)))
check("SetAlias sets it", reply.header.message_type.name == "method_return" and read_alias() == default)

# Another client's change is signalled on the collection: secret-tool stores an item.
member, path = signal_after(bus, default, lambda: subprocess.run(
    ["secret-tool", "store", "--label=signalled", "application", "kcar-test", "user", "sig"],
    input=b"by another client", check=True))
stored = list(collection.search_items({"user": "sig"}))
check("another client's item is signalled as ItemCreated",
      member == "ItemCreated" and [s.item_path for s in stored] == [path])
stored[0].delete()

item.delete()
check("delete removes it", list(collection.search_items({"user": "erin"})) == [])
try:
    item.get_secret()
    check("a deleted item's secret is gone", False)
except ItemNotFoundException:
    check("a deleted item's secret is gone", True)
print("done")
