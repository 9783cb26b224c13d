//go:build !invariants

package schedule

// invariantsOn is false without the build tag invariants: every check
// guarded by it compiles away (see invariants.go).
const invariantsOn = false
