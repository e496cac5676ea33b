// The vault types the keychain API speaks in (AttributeValue, Attributes, ItemClass, ItemID, SecureBytes)
// come with `import KcarKeychain`, so SecItem code needs one import, as it needs one with Security.
@_exported import VaultFormat
