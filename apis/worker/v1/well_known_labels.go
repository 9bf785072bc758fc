package v1

// The label, annotation and finalizer keys of the product, and the keys of others it reads: every one, in this
// one place, as Kubernetes keeps its own in k8s.io/api/core/v1. docs/glossary.md says what the words mean.

// Keys on nodes: what the product writes through NFD, and what NFD and the kubelet write that it reads.
const (
	// LabelManaged marks a node whose resources the product pools; absent or "false" leaves it out.
	LabelManaged = "gpustack.ai/managed"
	// LabelAcceleratable says whether a node has accelerators the product counts ("true") or none ("false").
	LabelAcceleratable = "feature.gpustack.ai/acceleratable"
	// LabelRDMACapable marks a node whose RDMA devices (InfiniBand or RoCE) have a port up ("true"); the device
	// manager sets it, and leaves it out elsewhere.
	LabelRDMACapable = "feature.gpustack.ai/rdma.capable"
	// LabelCPUOnly marks a node that counts in CPU pools only.
	LabelCPUOnly = "feature.gpustack.ai/cpu-only"
	// GeneralPrefix + gKey + ".count" is a node's count in a general (CPU) group.
	GeneralPrefix = "general.feature.gpustack.ai/"
	// AcceleratablePrefix + aKey + ".count" (and further fields) describes a node's accelerator group.
	AcceleratablePrefix = "acceleratable.feature.gpustack.ai/"
	// LabelSlicedMaxFreeUnits + aKey is the largest free units (credits) on one card that can still take a
	// slice and has a free slot; 0 when none can.
	LabelSlicedMaxFreeUnits = "sliced-max-free-units.fit.gpustack.ai/"
	// LabelSharedFreeCards + aKey is the number of cards that can still give a share.
	LabelSharedFreeCards = "shared-free-cards.fit.gpustack.ai/"
	// AnnotationCPUPrefix prefixes each CPU fact's node annotation (feature.gpustack.ai/cpu-name).
	AnnotationCPUPrefix = "feature.gpustack.ai/cpu-"
	// AnnotationCPUName is a node's CPU brand string, which names its gKey when CPU awareness is on.
	AnnotationCPUName = AnnotationCPUPrefix + "name"
	// AnnotationCPULogicalCores is a node's logical core count as its CPU reporter read it.
	AnnotationCPULogicalCores = AnnotationCPUPrefix + "logical-cores"
	// LabelCPUVendor is NFD's CPU vendor label.
	LabelCPUVendor = "feature.node.kubernetes.io/cpu-model.vendor_id"
	// LabelCPUFamily is NFD's CPU family label.
	LabelCPUFamily = "feature.node.kubernetes.io/cpu-model.family"
	// LabelCPUModelID is NFD's CPU model label.
	LabelCPUModelID = "feature.node.kubernetes.io/cpu-model.id"
	// LabelOS is the kubelet's operating system label.
	LabelOS = "kubernetes.io/os"
	// LabelArch is the kubelet's architecture label.
	LabelArch = "kubernetes.io/arch"
)

// Keys on the chain's objects: flavors, InstanceTypes, queues and composed objects.
const (
	// LabelResourceType says what a ResourceFlavor was made from: ResourceTypeNodes or ResourceTypeInstTypes.
	LabelResourceType = "resource.gpustack.ai/type"
	// ResourceTypeNodes is LabelResourceType of a flavor made from the nodes.
	ResourceTypeNodes = "nodes"
	// ResourceTypeInstTypes is LabelResourceType of a flavor made for InstanceTypes.
	ResourceTypeInstTypes = "instancetypes"
	// LabelDerivedFromNode marks an InstanceType the product derived from the nodes.
	LabelDerivedFromNode = "schedule.gpustack.ai/derived-from-node"
	// LabelQueueEntrance marks a LocalQueue that is an InstanceType's entrance.
	LabelQueueEntrance = "schedule.gpustack.ai/queue-entrance"
	// AnnotationQueue names the ClusterQueue an entrance LocalQueue leads to.
	AnnotationQueue = "schedule.gpustack.ai/queue"
	// AnnotationComposePolicy marks a desired object the embedded composer creates but never updates or prunes:
	// derived InstanceTypes are create-only.
	AnnotationComposePolicy = "gpustack.ai/compose-policy"
	// ComposePolicyCreateOnly is the value of AnnotationComposePolicy for create-only objects.
	ComposePolicyCreateOnly = "create-only"
	// AnnotationComposedHash records the hash of what the composer last applied to an object. A changed hash
	// means the composer wants something different (including fields it no longer sets, which server-side
	// apply then removes); an unchanged hash with drifted fields means someone else changed them.
	AnnotationComposedHash = "gpustack.ai/composed-hash"
	// NotePrefix prefixes a ResourceFlavor's hardware descriptors (note.gpustack.ai/cpuDetail): what its nodes
	// are made of, so a flavor read alone says it; the catalog (InstanceTypeFlavors) is what they say, grouped.
	NotePrefix = "note.gpustack.ai/"
	// NoteGeneralGroup is the flavor's gKey; NoteCPUManufacturer and NoteCPUDetail its nodes' CPU manufacturer
	// and model name, each when known.
	NoteGeneralGroup    = NotePrefix + "generalGroup"
	NoteCPUManufacturer = NotePrefix + "cpuManufacturer"
	NoteCPUDetail       = NotePrefix + "cpuDetail"
	// NoteGroup is an accelerated flavor's aKey; NoteManufacturer, NoteProduct, NoteFamily, NoteVRAM and
	// NoteCores describe one of its cards, each when known; NoteAcceleratorFeature is how one card divides,
	// as an InstanceTypeFeature in JSON.
	NoteGroup              = NotePrefix + "group"
	NoteManufacturer       = NotePrefix + "manufacturer"
	NoteProduct            = NotePrefix + "product"
	NoteFamily             = NotePrefix + "family"
	NoteVRAM               = NotePrefix + "vram"
	NoteCores              = NotePrefix + "cores"
	NoteAcceleratorFeature = NotePrefix + "acceleratorFeature"
	// AnnotationMigrationPhase marks a pool's ClusterQueue that the system stopped because the pool lost its
	// last flavor while the queue still reserved quota: Holding within the drain grace period, Draining once it
	// is over. AnnotationMigrationStopPolicy is the stop policy the system placed for it (Hold, HoldAndDrain),
	// so a reader tells it from an administrator's. Both go once the pool's flavors are back or nothing is
	// reserved.
	AnnotationMigrationPhase      = "topology.gpustack.ai/migration-phase"
	AnnotationMigrationStopPolicy = "topology.gpustack.ai/migration-stop-policy"
	// AnnotationEmptyPlanHold marks a new ClusterQueue that the system holds (Hold) because it has no resource
	// groups yet: no flavor of its pool exists (a type no node serves yet). It goes, with the Hold, once a
	// flavor fills the queue's groups; a queue that has started is not held again when it loses them.
	AnnotationEmptyPlanHold = "topology.gpustack.ai/empty-plan-hold"
	// MigrationHolding and MigrationDraining are the values of AnnotationMigrationPhase.
	MigrationHolding  = "Holding"
	MigrationDraining = "Draining"
	// FinalizerControlled holds an InstanceType until its queue is gone.
	FinalizerControlled = "gpustack.ai/controlled"
	// LabelManufacturer names the vendor of a device manager's objects (its DaemonSet, its Pods); rdma for the
	// agent of the nodes with an RDMA NIC and no card.
	LabelManufacturer = "gpustack.ai/manufacturer"
)

// Keys on Pods.
const (
	// LabelQueueName puts a Pod in a Kueue LocalQueue (Kueue's own label): an Instance's Pod names its type's
	// entrance.
	LabelQueueName = "kueue.x-k8s.io/queue-name"
	// LabelInstance names the Instance a Pod runs.
	LabelInstance = "instance.gpustack.ai/name"
	// LabelInstanceUID ties the Pod to one incarnation of the Instance.
	LabelInstanceUID = "instance.gpustack.ai/uid"
	// AnnotationAllocated records on a Pod which cards each of its containers holds, as a JSON map from
	// container name to card IDs. The ledger places a container once and keeps it there; the device plugin
	// hands out the recorded cards.
	AnnotationAllocated = "device.gpustack.ai/accelerator.allocated"
)

// Keys on Services.
const (
	// AnnotationInstanceAccess is set by a member cluster's worker on the Service it makes for an Instance a
	// manager cluster dispatched there: where the Instance is reached on the member (instancepod.Access: its
	// addresses and node ports), as JSON. The manager's worker-gateway passes it on to the manager's Pod
	// (gateway.gpustack.ai/member-access), whose Instance shows it.
	AnnotationInstanceAccess = "instance.gpustack.ai/access"
)
