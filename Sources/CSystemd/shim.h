// sd-bus, systemd's D-Bus library (libsystemd), through which the Secret Service talks to the session bus
// (SPEC.md K10).
#include <systemd/sd-bus.h>
