// Data, Date, UUID and the JSON coders too, as `import Security` brings CoreFoundation: the README's examples
// and the seeds' code compile with this one import (FoundationEssentials is what Foundation itself exports).
@_exported import FoundationEssentials
// The vault types the keychain API speaks in (AttributeValue, Attributes, ItemClass, ItemID, SecureBytes)
// come with `import KcarKeychain`, so SecItem code needs one import, as it needs one with Security.
@_exported import VaultFormat
