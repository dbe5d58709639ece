package numerical

import "errors"

var (
	// ErrInvalidInput is wrapped by errors about queries, grids, measures
	// and data points.
	ErrInvalidInput = errors.New("numerical: invalid input")
	// ErrInvalidConfig is wrapped by errors about a [Config].
	ErrInvalidConfig = errors.New("numerical: invalid config")
	// ErrTooLarge is wrapped when a universe does not fit the memory cap.
	ErrTooLarge = errors.New("numerical: universe too large")
)
