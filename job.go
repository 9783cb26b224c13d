package schedule

import "unsafe"

// A task's job is kept in two places, so that a slot holds one pointer:
//
//   - The slot keeps the job's func value (task.job) as the one machine word
//     every func value is, whatever its signature: a pointer to the func's
//     code and captured variables. The task's word says which signature it
//     has (flagWith: a func(TaskID, any), otherwise a func()), and the word
//     is set before the task's ID is published and never changes that bit,
//     so the run calls the func through the type it was stored from.
//   - The argument of a func(TaskID, any), when it is not nil, sits in the
//     slab's argument column (slab.argCell): an array of interfaces per
//     chunk, made for the first such argument the chunk's slots are given.
//     Chunks whose tasks are func() jobs, or share one job func with a nil
//     argument, have no column, and their slots cost 24 bytes.
//
// Both halves are written when the task begins, read by the run that holds
// the task, and cleared together, under the task's lock, when the job can
// no longer run (task.clearJob).

// job is a job as a caller hands it over: fn, the func value's word, and,
// for a func(TaskID, any) (with set), its argument.
type job struct {
	fn   unsafe.Pointer
	arg  any
	with bool
}

// jobOf is the job that calls f.
func jobOf(f func()) job { return job{fn: *(*unsafe.Pointer)(unsafe.Pointer(&f))} }

// jobWith is the job that calls f(id, arg), id being the task's ID.
func jobWith(f func(TaskID, any), arg any) job {
	return job{fn: *(*unsafe.Pointer)(unsafe.Pointer(&f)), arg: arg, with: true}
}

// call calls the job whose func value's word is fn: f(id, arg) if with,
// and f() otherwise. fn must have been stored from a func of that
// signature (jobOf, jobWith).
func call(fn unsafe.Pointer, with bool, id TaskID, arg any) {
	if with {
		(*(*func(TaskID, any))(unsafe.Pointer(&fn)))(id, arg)
		return
	}
	(*(*func())(unsafe.Pointer(&fn)))()
}
