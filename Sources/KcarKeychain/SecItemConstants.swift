// Apple's SecItem constants, with Apple's string values, so code written for the Security framework
// compiles against this module with its import changed (SPEC.md §K3). On Apple platforms they are CFStrings;
// here the dictionaries are `[String: Any]`.

public typealias CFString = String
public typealias CFDictionary = [String: Any]
public typealias CFTypeRef = AnyObject
public let kCFBooleanTrue: Bool? = true
public let kCFBooleanFalse: Bool? = false

// Classes
public let kSecClass = "class"
public let kSecClassGenericPassword = "genp"
public let kSecClassInternetPassword = "inet"
public let kSecClassCertificate = "cert"
public let kSecClassKey = "keys"
public let kSecClassIdentity = "idnt"

// Values and results
public let kSecValueData = "v_Data"
public let kSecValueRef = "v_Ref"
public let kSecValuePersistentRef = "v_PersistentRef"
public let kSecReturnData = "r_Data"
public let kSecReturnAttributes = "r_Attributes"
public let kSecReturnRef = "r_Ref"
public let kSecReturnPersistentRef = "r_PersistentRef"

// Search
public let kSecMatchLimit = "m_Limit"
public let kSecMatchLimitOne = "m_LimitOne"
public let kSecMatchLimitAll = "m_LimitAll"
public let kSecMatchCaseInsensitive = "m_CaseInsensitive"
public let kSecUseDataProtectionKeychain = "nleg"

// Attributes
public let kSecAttrAccessGroup = "agrp"
public let kSecAttrAccessible = "pdmn"
public let kSecAttrSynchronizable = "sync"
public let kSecAttrSynchronizableAny = "syna"
public let kSecAttrService = "svce"
public let kSecAttrAccount = "acct"
public let kSecAttrLabel = "labl"
public let kSecAttrDescription = "desc"
public let kSecAttrComment = "icmt"
public let kSecAttrGeneric = "gena"
public let kSecAttrCreator = "crtr"
public let kSecAttrType = "type"
public let kSecAttrCreationDate = "cdat"
public let kSecAttrModificationDate = "mdat"
public let kSecAttrIsInvisible = "invi"
public let kSecAttrIsNegative = "nega"
public let kSecAttrServer = "srvr"
public let kSecAttrSecurityDomain = "sdmn"
public let kSecAttrPath = "path"
public let kSecAttrProtocol = "ptcl"
public let kSecAttrAuthenticationType = "atyp"
public let kSecAttrPort = "port"
public let kSecAttrCertificateType = "ctyp"
public let kSecAttrCertificateEncoding = "cenc"
public let kSecAttrSubject = "subj"
public let kSecAttrIssuer = "issr"
public let kSecAttrSerialNumber = "slnr"
public let kSecAttrSubjectKeyID = "skid"
public let kSecAttrPublicKeyHash = "pkhh"
public let kSecAttrKeyClass = "kcls"
public let kSecAttrApplicationLabel = "klbl"
public let kSecAttrApplicationTag = "atag"
public let kSecAttrKeyType = "type"
public let kSecAttrKeySizeInBits = "bsiz"
public let kSecAttrEffectiveKeySize = "esiz"
public let kSecAttrIsPermanent = "perm"
public let kSecAttrCanEncrypt = "encr"
public let kSecAttrCanDecrypt = "decr"
public let kSecAttrCanDerive = "drve"
public let kSecAttrCanSign = "sign"
public let kSecAttrCanVerify = "vrfy"
public let kSecAttrCanWrap = "wrap"
public let kSecAttrCanUnwrap = "unwp"

// Accessibility
public let kSecAttrAccessibleWhenUnlocked = "ak"
public let kSecAttrAccessibleAfterFirstUnlock = "ck"
public let kSecAttrAccessibleAlways = "dk"
public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly = "aku"
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly = "cku"
public let kSecAttrAccessibleAlwaysThisDeviceOnly = "dku"
public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly = "akpu"

// Key classes and types
public let kSecAttrKeyClassPublic = "0"
public let kSecAttrKeyClassPrivate = "1"
public let kSecAttrKeyClassSymmetric = "2"
public let kSecAttrKeyTypeRSA = "42"
public let kSecAttrKeyTypeEC = "73"
public let kSecAttrKeyTypeECSECPrimeRandom = "73"

// Protocols (a selection of Apple's four-character codes)
public let kSecAttrProtocolHTTP = "http"
public let kSecAttrProtocolHTTPS = "htps"
public let kSecAttrProtocolFTP = "ftp "
public let kSecAttrProtocolFTPS = "ftps"
public let kSecAttrProtocolSSH = "ssh "
public let kSecAttrProtocolSMTP = "smtp"
public let kSecAttrProtocolIMAP = "imap"
public let kSecAttrProtocolIMAPS = "imps"
public let kSecAttrProtocolLDAP = "ldap"
public let kSecAttrProtocolLDAPS = "ldps"

// Authentication types
public let kSecAttrAuthenticationTypeDefault = "dflt"
public let kSecAttrAuthenticationTypeHTMLForm = "form"
public let kSecAttrAuthenticationTypeHTTPBasic = "http"
public let kSecAttrAuthenticationTypeHTTPDigest = "httd"
public let kSecAttrAuthenticationTypeNTLM = "ntlm"

/// The dictionary key of a kcar user attribute (stored as `@name`, SPEC.md §K3): a typed value under any name,
/// searchable from the index, e.g. `[kcarUserAttribute("categoryName"): "管理员"]`.
public func kcarUserAttribute(_ name: String) -> String { "@" + name }
