package release

import (
	"testing"
	"time"
)

func TestCreatedAt(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if got, want := createdAt(), time.Unix(1700000000, 0).UTC(); !got.Equal(want) {
		t.Errorf("with SOURCE_DATE_EPOCH: %v, want %v", got, want)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "not a number")
	if got := createdAt(); time.Since(got) > time.Minute || got.Nanosecond() != 0 {
		t.Errorf("bad SOURCE_DATE_EPOCH: %v, want now in whole seconds", got)
	}
}
