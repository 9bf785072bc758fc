package main

import (
	"math"
	"runtime/debug"
	"strconv"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// containerMemoryLimitEnv holds the container's memory limit in bytes; the chart sets it from the container's
// resources (a resourceFieldRef), so the Go runtime knows the limit it runs under.
const containerMemoryLimitEnv = "CONTAINER_MEMORY_LIMIT"

// memoryLimitShare is the part of the container's limit the Go runtime's soft limit is set to: the rest is room
// for what the runtime does not count (stacks of cgo, the binary's own pages) before the kernel's OOM killer.
const memoryLimitShare = 0.9

// softMemoryLimit returns the soft memory limit for the Go runtime: memoryLimitShare of the container's limit,
// and false where GOMEMLIMIT is set (the user's word stands) or no container limit is known. A limit that is
// not a number of bytes is an error naming the variable.
func softMemoryLimit(getenv func(string) string) (int64, bool, error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false, nil
	}
	v := getenv(containerMemoryLimitEnv)
	if v == "" {
		return 0, false, nil
	}
	limit, err := strconv.ParseInt(v, 10, 64)
	if err != nil || limit <= 0 {
		return 0, false, errors.Errorf("%s=%q is not a number of bytes", containerMemoryLimitEnv, v)
	}
	return int64(math.Floor(float64(limit) * memoryLimitShare)), true, nil
}

// setSoftMemoryLimit sets the Go runtime's soft memory limit from the container's, so the garbage collector
// works harder as the process nears the limit instead of letting the heap grow to twice its live size and the
// kernel kill the process.
func setSoftMemoryLimit(getenv func(string) string) error {
	limit, ok, err := softMemoryLimit(getenv)
	if ok {
		debug.SetMemoryLimit(limit)
	}
	return err
}
