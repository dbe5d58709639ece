package dp

import (
	crand "crypto/rand"
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// Source is a stream of uniformly random 64-bit words, the only randomness
// mechanisms draw from. Sources are not safe for concurrent use.
type Source interface {
	// Uint64 returns a uniformly random 64-bit word.
	Uint64() uint64
	// Seeded reports whether the stream is reproducible from a seed, which
	// makes any release drawn from it not private.
	Seeded() bool
}

type chachaSource struct {
	r      *rand.ChaCha8
	seeded bool
}

func (s *chachaSource) Uint64() uint64 { return s.r.Uint64() }
func (s *chachaSource) Seeded() bool   { return s.seeded }

// NewSource returns the default source: a ChaCha8 generator (a
// cryptographically strong generator, see math/rand/v2) keyed with 32 bytes
// from crypto/rand. It panics only if the operating system's random source
// fails, as crypto/rand.Read does.
func NewSource() Source {
	var key [32]byte
	if _, err := crand.Read(key[:]); err != nil {
		panic("dp: crypto/rand failed: " + err.Error())
	}
	return &chachaSource{r: rand.NewChaCha8(key)}
}

// NewSeededSource returns a reproducible source for tests and --seed runs.
// Everything drawn from it is marked not private.
func NewSeededSource(seed uint64) Source {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	copy(key[8:], "synth seeded source, not private")
	return &chachaSource{r: rand.NewChaCha8(key), seeded: true}
}

// Uniform returns a uniform float64 in the open interval (0, 1), on the grid
// (k + 1/2)/2⁵², k = 0 … 2⁵²−1, symmetric about 1/2. (A 53-bit grid would
// round its top point (2⁵³ − 1/2)/2⁵³ up to 1.)
func Uniform(src Source) float64 {
	return (float64(src.Uint64()>>12) + 0.5) / (1 << 52)
}

// uniformSigned returns a uniform value in (−1/2, 1/2), never 0.
func uniformSigned(src Source) float64 { return Uniform(src) - 0.5 }

// gumbel returns a standard Gumbel variate −ln(−ln U).
func gumbel(src Source) float64 { return -math.Log(-math.Log(Uniform(src))) }
