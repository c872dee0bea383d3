package fsys

import "hash/crc32"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C extends crc with the CRC-32C (Castagnoli) of b: the checksum of
// the store's logs and of the lines of its indexes (docs/storage.md).
func CRC32C(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }
