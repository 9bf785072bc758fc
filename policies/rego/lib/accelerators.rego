# Helpers shared by the Pod rules: the nine vendors' base resources, the containers that can claim an
# accelerator, and the family of a resource key.
package lib.accelerators

# bases are the whole-card resources of the nine vendors.
bases := [
	"nvidia.com/gpu", "amd.com/gpu", "huawei.com/npu", "cambricon.com/mlu", "hygon.com/dcu",
	"iluvatar.com/gpu", "metax-tech.com/gpu", "mthreads.com/gpu", "alibabacloud.com/ppu",
]

pod := input.review.object

# restartable holds for a native sidecar: an init container with restartPolicy Always.
restartable(c) if c.restartPolicy == "Always"

limits(c) := object.get(c, ["resources", "limits"], {})

# claims are the app containers and the init containers that are not native sidecars, in order, each with
# the path of its limits.
claims := array.concat(
	[{"path": sprintf("spec.containers[%d].resources.limits", [i]), "group": "app", "limits": limits(c)} |
		some i, c in pod.spec.containers
	],
	[{"path": sprintf("spec.initContainers[%d].resources.limits", [i]), "group": "init", "limits": limits(c)} |
		some i, c in object.get(pod.spec, "initContainers", [])
		not restartable(c)
	],
)

# keys are the accelerator keys of every claim, each split into its vendor's base resource and the suffix
# after it (nvidia.com/gpu.sliced.memory-mib: nvidia.com/gpu and .sliced.memory-mib), so each key is
# classified once.
keys := [{"path": c.path, "group": c.group, "key": k, "base": base, "suffix": substring(k, count(base), -1)} |
	some c in claims
	some k, _ in c.limits
	base := base_of(k)
	base in bases
]

# base_of returns the part of a resource key before the first dot after its slash.
base_of(k) := concat("/", [prefix, split(name, ".")[0]]) if {
	slash := indexof(k, "/")
	slash > 0
	prefix := substring(k, 0, slash)
	name := substring(k, slash + 1, -1)
}

# suffix_family returns the family of a key's suffix, or is undefined for a key of no family.
suffix_family("") := "exclusive"

suffix_family(".shared") := "shared"

suffix_family(s) := "sliced" if {
	suffix_in(s, ".sliced")
}

suffix_family(s) := "partitioned" if {
	suffix_in(s, ".partitioned")
}

suffix_in(s, f) if s == f

suffix_in(s, f) if startswith(s, concat("", [f, "."]))

# accelerator holds for a key of any accelerator family.
accelerator(k) if {
	some b in bases
	k == b
}

accelerator(k) if {
	some b in bases
	startswith(k, concat("", [b, "."]))
}

# quantity is a limit's value as a number ("1000m" is 1).
quantity(v) := units.parse(sprintf("%v", [v]))

# text is a limit's value as the API server shows it.
text(v) := sprintf("%v", [v])

# judged holds for the Pods the rules look at: queued on Kueue (labelled kueue.x-k8s.io/queue-name), not in a
# system namespace, not created by the operator.
judged if {
	pod.metadata.labels["kueue.x-k8s.io/queue-name"]
	not object.get(input.review, "namespace", "") in {"kube-system", "kube-public", "kube-node-lease", "gpustack-system", "gpustack-device-manager", "node-feature-discovery", "gpustack-storage", "kueue-system"}

	# Reviews without a user (gator, audit) have no userInfo.username.
	not startswith(object.get(input.review, ["userInfo", "username"], ""), "system:serviceaccount:gpustack-system:")
}
