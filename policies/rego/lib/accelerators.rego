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

# accelerator holds for a key of any accelerator family.
accelerator(k) if {
	some b in bases
	k == b
}

accelerator(k) if {
	some b in bases
	startswith(k, concat("", [b, "."]))
}

# family returns the family of key k of base b, or is undefined when k is not one of b's.
family(k, b) := "exclusive" if k == b

family(k, b) := "shared" if k == concat("", [b, ".shared"])

family(k, b) := "sliced" if {
	in_family(k, b, "sliced")
}

family(k, b) := "partitioned" if {
	in_family(k, b, "partitioned")
}

in_family(k, b, f) if k == concat(".", [b, f])

in_family(k, b, f) if startswith(k, concat("", [b, ".", f, "."]))

# quantity is a limit's value as a number ("1000m" is 1).
quantity(v) := units.parse(sprintf("%v", [v]))

# text is a limit's value as the API server shows it.
text(v) := sprintf("%v", [v])

# judged holds for the Pods the rules look at: queued on Kueue (labelled kueue.x-k8s.io/queue-name), not in a
# system namespace, not created by the operator.
judged if {
	pod.metadata.labels["kueue.x-k8s.io/queue-name"]
	not object.get(input.review, "namespace", "") in {"kube-system", "kube-public", "kube-node-lease", "gpustack-system", "kueue-system"}

	# Reviews without a user (gator, audit) have no userInfo.username.
	not startswith(object.get(input.review, ["userInfo", "username"], ""), "system:serviceaccount:gpustack-system:")
}
