package fsys

import "hash/crc32"

// CRC32C extends crc with the CRC-32C (Castagnoli) of b: the checksum of
// the store's logs and of the lines of its indexes (docs/storage.md).
// MakeTable builds the Castagnoli table once, at the first checksum, not
// when the package initialises: a process that writes nothing never
// builds it.
func CRC32C(crc uint32, b []byte) uint32 {
	return crc32.Update(crc, crc32.MakeTable(crc32.Castagnoli), b)
}
