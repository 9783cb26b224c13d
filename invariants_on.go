//go:build invariants

package schedule

// Built with the tag invariants (go test -tags invariants): the cheap
// checks below run, in the runtime's manner (badTimer, verifyTimers), and a
// broken invariant panics with a message that names it. Without the tag,
// invariants.go's constant is false and every check compiles away.
const invariantsOn = true
