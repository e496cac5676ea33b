/// Heterogeneous values <-> archive bytes: the keyed archiver that replaces NSKeyedArchiver (issue 3).
public enum KeyedArchive {}
