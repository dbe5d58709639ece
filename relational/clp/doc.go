// Package clp is a thin cgo wrapper of COIN-OR CLP's C interface
// (Clp_C_Interface.h): it loads one linear program in column-major form and
// solves it with the simplex method. It exists for R2T's LP truncation with
// three or more units (package relational) and is compiled only with the
// clp build tag; it needs the CLP library and its pkg-config file (Debian:
// apt-get install coinor-libclp-dev).
//
// Each [Solve] creates, solves and frees its own model, so concurrent calls
// are safe. A solve cannot be interrupted: ctx is checked before it starts.
package clp
