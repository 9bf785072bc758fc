// Package providers is the vendor-neutral device inventory: the model every backend reports in, and the
// Provider interface the device manager runs. Each vendor has its own backend package; the simulated backend
// reads the local cluster's inventory file.
package providers

import "context"

// Device is one accelerator card as a backend detected it.
type Device struct {
	// Manufacturer is the vendor key (nvidia).
	Manufacturer string
	// Product is the product name as the driver reports it (NVIDIA A10G).
	Product string
	// UUID identifies the card.
	UUID string
	// Index is the card's index on the node.
	Index int32
	// MemoryMiB is the card's memory.
	MemoryMiB int64
	// Cores is the card's compute cores.
	Cores int64
	// Family is the architecture family (Ampere).
	Family string
	// ComputeCapability is the compute capability (8.6).
	ComputeCapability string
	// DriverVersion is the kernel driver's version.
	DriverVersion string
	// RuntimeVersion is the compute runtime's version.
	RuntimeVersion string
	// Unhealthy is true when the card cannot take work.
	Unhealthy bool
	// Partitions are the card's hardware partition profiles while it is in a partitioning mode (MIG); empty
	// otherwise.
	Partitions []Partition
}

// Partition is one hardware partition profile of a card.
type Partition struct {
	// Name is the profile (3g.40gb).
	Name string
	// MemoryMiB is one partition's memory.
	MemoryMiB int64
	// ComputeSlices is the number of compute slices one partition takes.
	ComputeSlices int32
	// MemorySlices is the number of memory slices one partition takes, the size of its placements.
	MemorySlices int32
	// Count is how many partitions of the profile one empty card holds.
	Count int32
	// Placements are the legal start positions of the profile.
	Placements []int32
}

// Provider detects the accelerators of the node it runs on.
type Provider interface {
	// Name names the backend.
	Name() string
	// Detect returns the node's cards. A backend that can read some cards but not others returns what it
	// read, with the others marked unhealthy, and an error describing the rest.
	Detect(ctx context.Context) ([]Device, error)
}
