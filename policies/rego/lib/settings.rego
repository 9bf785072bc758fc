# Helpers shared by the Instance gates: a setting's value, read from the Setting objects that Gatekeeper
# replicates into data.inventory (or that a test provides there), defaulting to false.
package lib.settings

enabled(name) if {
	data.inventory.namespace["gpustack-system"]["worker.gpustack.ai/v1"].Setting[name].spec.value == "true"
}

# judged holds for requests the gates look at: not in a system namespace, not from the operator.
judged if {
	not object.get(input.review, "namespace", "") in {"kube-system", "kube-public", "kube-node-lease", "gpustack-system", "gpustack-device-manager", "node-feature-discovery", "gpustack-storage", "kueue-system"}

	# Reviews without a user (gator, audit) have no userInfo.username.
	not startswith(object.get(input.review, ["userInfo", "username"], ""), "system:serviceaccount:gpustack-system:")
}
