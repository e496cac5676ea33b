// Apple's SecItem constants, with Apple's string values, so code written for the Security framework
// compiles against this module with its import changed (SPEC.md §K3). On Apple platforms they are CFStrings;
// here the dictionaries are `[String: Any]`.

/// Apple's `CFString`: here `String`, so that ported code compiles.
public typealias CFString = String
/// Apple's `CFDictionary`: here `[String: Any]`, so that ported code compiles.
public typealias CFDictionary = [String: Any]
/// Apple's `CFTypeRef`: here `AnyObject`, so that ported code compiles.
public typealias CFTypeRef = AnyObject
/// Apple's `kCFBooleanTrue`: `true` as an optional, as a query dictionary takes it.
public let kCFBooleanTrue: Bool? = true
/// Apple's `kCFBooleanFalse`: `false` as an optional, as a query dictionary takes it.
public let kCFBooleanFalse: Bool? = false

// Classes
/// Apple's `kSecClass`: the query key whose value is the item's class (`class` here).
public let kSecClass = "class"
/// Apple's `kSecClassGenericPassword`: an item class, `genp` in kcar's dictionaries (SPEC.md §K3).
public let kSecClassGenericPassword = "genp"
/// Apple's `kSecClassInternetPassword`: an item class, `inet` in kcar's dictionaries (SPEC.md §K3).
public let kSecClassInternetPassword = "inet"
/// Apple's `kSecClassCertificate`: an item class, `cert` in kcar's dictionaries (SPEC.md §K3).
public let kSecClassCertificate = "cert"
/// Apple's `kSecClassKey`: an item class, `keys` in kcar's dictionaries (SPEC.md §K3).
public let kSecClassKey = "keys"
/// Apple's `kSecClassIdentity`: an item class, `idnt` in kcar's dictionaries (SPEC.md §K3).
public let kSecClassIdentity = "idnt"

// Values and results
/// Apple's `kSecValueData`: a query key, `v_Data` in kcar's dictionaries (SPEC.md §K3).
public let kSecValueData = "v_Data"
/// Apple's `kSecValueRef`: a query key, `v_Ref` in kcar's dictionaries (SPEC.md §K3).
public let kSecValueRef = "v_Ref"
/// Apple's `kSecValuePersistentRef`: a query key, `v_PersistentRef` in kcar's dictionaries (SPEC.md §K3).
public let kSecValuePersistentRef = "v_PersistentRef"
/// Apple's `kSecReturnData`: a query key, `r_Data` in kcar's dictionaries (SPEC.md §K3).
public let kSecReturnData = "r_Data"
/// Apple's `kSecReturnAttributes`: a query key, `r_Attributes` in kcar's dictionaries (SPEC.md §K3).
public let kSecReturnAttributes = "r_Attributes"
/// Apple's `kSecReturnRef`: a query key, `r_Ref` in kcar's dictionaries (SPEC.md §K3).
public let kSecReturnRef = "r_Ref"
/// Apple's `kSecReturnPersistentRef`: a query key, `r_PersistentRef` in kcar's dictionaries (SPEC.md §K3).
public let kSecReturnPersistentRef = "r_PersistentRef"

// Search
/// Apple's `kSecMatchLimit`: a query key or value, `m_Limit` in kcar's dictionaries (SPEC.md §K3).
public let kSecMatchLimit = "m_Limit"
/// Apple's `kSecMatchLimitOne`: a query key or value, `m_LimitOne` in kcar's dictionaries (SPEC.md §K3).
public let kSecMatchLimitOne = "m_LimitOne"
/// Apple's `kSecMatchLimitAll`: a query key or value, `m_LimitAll` in kcar's dictionaries (SPEC.md §K3).
public let kSecMatchLimitAll = "m_LimitAll"
/// Apple's `kSecMatchCaseInsensitive`: a query key or value, `m_CaseInsensitive` in kcar's dictionaries (SPEC.md §K3).
public let kSecMatchCaseInsensitive = "m_CaseInsensitive"
/// Apple's `kSecUseDataProtectionKeychain`: a query key or value, `nleg` in kcar's dictionaries (SPEC.md §K3).
public let kSecUseDataProtectionKeychain = "nleg"

// Attributes
/// Apple's `kSecAttrAccessGroup`: an item attribute, `agrp` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAccessGroup = "agrp"
/// Apple's `kSecAttrAccessible`: an item attribute, `pdmn` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAccessible = "pdmn"
/// Apple's `kSecAttrSynchronizable`: an item attribute, `sync` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrSynchronizable = "sync"
/// Apple's `kSecAttrSynchronizableAny`: an item attribute, `syna` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrSynchronizableAny = "syna"
/// Apple's `kSecAttrService`: an item attribute, `svce` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrService = "svce"
/// Apple's `kSecAttrAccount`: an item attribute, `acct` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAccount = "acct"
/// Apple's `kSecAttrLabel`: an item attribute, `labl` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrLabel = "labl"
/// Apple's `kSecAttrDescription`: an item attribute, `desc` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrDescription = "desc"
/// Apple's `kSecAttrComment`: an item attribute, `icmt` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrComment = "icmt"
/// Apple's `kSecAttrGeneric`: an item attribute, `gena` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrGeneric = "gena"
/// Apple's `kSecAttrCreator`: an item attribute, `crtr` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrCreator = "crtr"
/// Apple's `kSecAttrType`: an item attribute, `type` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrType = "type"
/// Apple's `kSecAttrCreationDate`: an item attribute, `cdat` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrCreationDate = "cdat"
/// Apple's `kSecAttrModificationDate`: an item attribute, `mdat` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrModificationDate = "mdat"
/// Apple's `kSecAttrIsInvisible`: an item attribute, `invi` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrIsInvisible = "invi"
/// Apple's `kSecAttrIsNegative`: an item attribute, `nega` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrIsNegative = "nega"
/// Apple's `kSecAttrServer`: an item attribute, `srvr` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrServer = "srvr"
/// Apple's `kSecAttrSecurityDomain`: an item attribute, `sdmn` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrSecurityDomain = "sdmn"
/// Apple's `kSecAttrPath`: an item attribute, `path` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrPath = "path"
/// Apple's `kSecAttrProtocol`: an item attribute, `ptcl` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrProtocol = "ptcl"
/// Apple's `kSecAttrAuthenticationType`: an item attribute, `atyp` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAuthenticationType = "atyp"
/// Apple's `kSecAttrPort`: an item attribute, `port` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrPort = "port"
/// Apple's `kSecAttrCertificateType`: an item attribute, `ctyp` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrCertificateType = "ctyp"
/// Apple's `kSecAttrCertificateEncoding`: an item attribute, `cenc` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrCertificateEncoding = "cenc"
/// Apple's `kSecAttrSubject`: an item attribute, `subj` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrSubject = "subj"
/// Apple's `kSecAttrIssuer`: an item attribute, `issr` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrIssuer = "issr"
/// Apple's `kSecAttrSerialNumber`: an item attribute, `slnr` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrSerialNumber = "slnr"
/// Apple's `kSecAttrSubjectKeyID`: an item attribute, `skid` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrSubjectKeyID = "skid"
/// Apple's `kSecAttrPublicKeyHash`: an item attribute, `pkhh` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrPublicKeyHash = "pkhh"
/// Apple's `kSecAttrKeyClass`: an item attribute, `kcls` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrKeyClass = "kcls"
/// Apple's `kSecAttrApplicationLabel`: an item attribute, `klbl` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrApplicationLabel = "klbl"
/// Apple's `kSecAttrApplicationTag`: an item attribute, `atag` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrApplicationTag = "atag"
/// Apple's `kSecAttrKeyType`: an item attribute, `type` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrKeyType = "type"
/// Apple's `kSecAttrKeySizeInBits`: an item attribute, `bsiz` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrKeySizeInBits = "bsiz"
/// Apple's `kSecAttrEffectiveKeySize`: an item attribute, `esiz` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrEffectiveKeySize = "esiz"
/// Apple's `kSecAttrIsPermanent`: an item attribute, `perm` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrIsPermanent = "perm"
/// Apple's `kSecAttrCanEncrypt`: an item attribute, `encr` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrCanEncrypt = "encr"
/// Apple's `kSecAttrCanDecrypt`: an item attribute, `decr` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrCanDecrypt = "decr"
/// Apple's `kSecAttrCanDerive`: an item attribute, `drve` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrCanDerive = "drve"
/// Apple's `kSecAttrCanSign`: an item attribute, `sign` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrCanSign = "sign"
/// Apple's `kSecAttrCanVerify`: an item attribute, `vrfy` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrCanVerify = "vrfy"
/// Apple's `kSecAttrCanWrap`: an item attribute, `wrap` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrCanWrap = "wrap"
/// Apple's `kSecAttrCanUnwrap`: an item attribute, `unwp` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrCanUnwrap = "unwp"

// Accessibility
/// Apple's `kSecAttrAccessibleWhenUnlocked`: an accessibility level (the value of `kSecAttrAccessible`), `ak` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAccessibleWhenUnlocked = "ak"
/// Apple's `kSecAttrAccessibleAfterFirstUnlock`: an accessibility level (the value of `kSecAttrAccessible`), `ck` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAccessibleAfterFirstUnlock = "ck"
/// Apple's `kSecAttrAccessibleAlways`: an accessibility level (the value of `kSecAttrAccessible`), `dk` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAccessibleAlways = "dk"
/// Apple's `kSecAttrAccessibleWhenUnlockedThisDeviceOnly`: an accessibility level (the value of `kSecAttrAccessible`), `aku` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly = "aku"
/// Apple's `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`: an accessibility level (the value of `kSecAttrAccessible`), `cku` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly = "cku"
/// Apple's `kSecAttrAccessibleAlwaysThisDeviceOnly`: an accessibility level (the value of `kSecAttrAccessible`), `dku` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAccessibleAlwaysThisDeviceOnly = "dku"
/// Apple's `kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly`: an accessibility level (the value of `kSecAttrAccessible`), `akpu` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly = "akpu"

// Key classes and types
/// Apple's `kSecAttrKeyClassPublic`: a key class or type (the value of `kSecAttrKeyClass` or `kSecAttrKeyType`), `0` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrKeyClassPublic = "0"
/// Apple's `kSecAttrKeyClassPrivate`: a key class or type (the value of `kSecAttrKeyClass` or `kSecAttrKeyType`), `1` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrKeyClassPrivate = "1"
/// Apple's `kSecAttrKeyClassSymmetric`: a key class or type (the value of `kSecAttrKeyClass` or `kSecAttrKeyType`), `2` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrKeyClassSymmetric = "2"
/// Apple's `kSecAttrKeyTypeRSA`: a key class or type (the value of `kSecAttrKeyClass` or `kSecAttrKeyType`), `42` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrKeyTypeRSA = "42"
/// Apple's `kSecAttrKeyTypeEC`: a key class or type (the value of `kSecAttrKeyClass` or `kSecAttrKeyType`), `73` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrKeyTypeEC = "73"
/// Apple's `kSecAttrKeyTypeECSECPrimeRandom`: a key class or type (the value of `kSecAttrKeyClass` or `kSecAttrKeyType`), `73` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrKeyTypeECSECPrimeRandom = "73"

// Protocols (a selection of Apple's four-character codes)
/// Apple's `kSecAttrProtocolHTTP`: a protocol (the value of `kSecAttrProtocol`), `http` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrProtocolHTTP = "http"
/// Apple's `kSecAttrProtocolHTTPS`: a protocol (the value of `kSecAttrProtocol`), `htps` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrProtocolHTTPS = "htps"
/// Apple's `kSecAttrProtocolFTP`: a protocol (the value of `kSecAttrProtocol`), `ftp ` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrProtocolFTP = "ftp "
/// Apple's `kSecAttrProtocolFTPS`: a protocol (the value of `kSecAttrProtocol`), `ftps` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrProtocolFTPS = "ftps"
/// Apple's `kSecAttrProtocolSSH`: a protocol (the value of `kSecAttrProtocol`), `ssh ` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrProtocolSSH = "ssh "
/// Apple's `kSecAttrProtocolSMTP`: a protocol (the value of `kSecAttrProtocol`), `smtp` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrProtocolSMTP = "smtp"
/// Apple's `kSecAttrProtocolIMAP`: a protocol (the value of `kSecAttrProtocol`), `imap` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrProtocolIMAP = "imap"
/// Apple's `kSecAttrProtocolIMAPS`: a protocol (the value of `kSecAttrProtocol`), `imps` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrProtocolIMAPS = "imps"
/// Apple's `kSecAttrProtocolLDAP`: a protocol (the value of `kSecAttrProtocol`), `ldap` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrProtocolLDAP = "ldap"
/// Apple's `kSecAttrProtocolLDAPS`: a protocol (the value of `kSecAttrProtocol`), `ldps` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrProtocolLDAPS = "ldps"

// Authentication types
/// Apple's `kSecAttrAuthenticationTypeDefault`: an authentication type (the value of `kSecAttrAuthenticationType`), `dflt` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAuthenticationTypeDefault = "dflt"
/// Apple's `kSecAttrAuthenticationTypeHTMLForm`: an authentication type (the value of `kSecAttrAuthenticationType`), `form` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAuthenticationTypeHTMLForm = "form"
/// Apple's `kSecAttrAuthenticationTypeHTTPBasic`: an authentication type (the value of `kSecAttrAuthenticationType`), `http` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAuthenticationTypeHTTPBasic = "http"
/// Apple's `kSecAttrAuthenticationTypeHTTPDigest`: an authentication type (the value of `kSecAttrAuthenticationType`), `httd` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAuthenticationTypeHTTPDigest = "httd"
/// Apple's `kSecAttrAuthenticationTypeNTLM`: an authentication type (the value of `kSecAttrAuthenticationType`), `ntlm` in kcar's dictionaries (SPEC.md §K3).
public let kSecAttrAuthenticationTypeNTLM = "ntlm"

/// The dictionary key of a kcar user attribute (stored as `@name`, SPEC.md §K3): a typed value under any name,
/// searchable from the index, e.g. `[kcarUserAttribute("categoryName"): "管理员"]`.
public func kcarUserAttribute(_ name: String) -> String { "@" + name }
