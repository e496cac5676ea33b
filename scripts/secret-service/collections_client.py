#!/usr/bin/python3
"""Collections over python3-secretstorage (jeepney) against kcar secret-service, run by SecretServiceCLITests:
a collection created, used, made the default and deleted, and another writer's change (kcar itself) heard
as a signal. Usage: collections_client.py KCAR (the kcar binary, which shares the daemon's keychain).

gnome-keyring asks the user for a new collection's password through a prompt, which needs a desktop, so this
script runs against kcar only (kcar needs no prompt: SPEC.md K10); secretstorage_client.py is the one that
runs against both. It prints one line per check and exits 1 at the first check that fails.
"""
import subprocess
import sys

import secretstorage
from jeepney import new_method_call
from secretstorage.exceptions import ItemNotFoundException

from checks import SERVICE, check, signal_after

KCAR = sys.argv[1]


def service_call(member, signature, body):
    reply = bus.send_and_get_reply(new_method_call(SERVICE, member, signature, body))
    check(member + " is answered", reply.header.message_type.name == "method_return")
    return reply.body


bus = secretstorage.dbus_init()
work = secretstorage.create_collection(bus, "work")
check("create_collection makes an unlocked collection", work.get_label() == "work" and not work.is_locked())
check("it is listed", "work" in [c.get_label() for c in secretstorage.get_all_collections(bus)])
item = work.create_item("work token", {"app": "work"}, b"w-secret")
check("an item is stored in it", [i.item_path for i in secretstorage.search_items(bus, {"app": "work"})]
      == [item.item_path])
found = subprocess.run([KCAR, "get", "--group", "work", "--attr", "app=work"], capture_output=True)
check("kcar reads it from the group", found.returncode == 0 and found.stdout == b"w-secret")

before = service_call("ReadAlias", "s", ("default",))[0]
service_call("SetAlias", "so", ("default", work.collection_path))
check("SetAlias makes it the default", secretstorage.get_default_collection(bus).get_label() == "work")
if before == "/":
    service_call("SetAlias", "so", ("default", "/"))
else:
    service_call("SetAlias", "so", ("default", before))
check("and back", service_call("ReadAlias", "s", ("default",))[0] == before)

# Another writer: kcar adds an item to the group; the daemon sees its vault change and signals it.
member, path = signal_after(bus, work.collection_path, lambda: subprocess.run(
    [KCAR, "add", "--group", "work", "--service", "cli", "--account", "dave", "--attr", "app=cli"],
    input=b"from kcar\n", check=True))
added = list(work.search_items({"app": "cli"}))
check("kcar's add is signalled as ItemCreated", member == "ItemCreated" and [i.item_path for i in added] == [path])
check("its secret reads", added[0].get_secret() == b"from kcar")

work.delete()
check("delete removes the collection", "work" not in [c.get_label() for c in secretstorage.get_all_collections(bus)])
try:
    item.get_secret()
    check("an item of a deleted collection is gone", False)
except ItemNotFoundException:
    check("an item of a deleted collection is gone", True)
gone = subprocess.run([KCAR, "get", "--group", "work", "--attr", "app=work"], capture_output=True)
check("kcar finds the group gone", gone.returncode != 0)
print("done")
