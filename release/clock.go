package release

import (
	"os"
	"strconv"
	"time"
)

// createdAt is the creation time a release records (privacy report, Parquet
// metadata): SOURCE_DATE_EPOCH (seconds since 1970, the reproducible-builds
// convention) when it is set to an integer, else now; UTC, whole seconds.
// With --seed and SOURCE_DATE_EPOCH set, two runs write byte-identical
// files; without it they differ in this timestamp only.
func createdAt() time.Time {
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		if s, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Unix(s, 0).UTC()
		}
	}
	return time.Now().UTC().Truncate(time.Second)
}
