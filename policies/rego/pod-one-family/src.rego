# Rule 1: one accelerator family per Pod, in one container group.
package gpustack.pod_one_family

import data.lib.accelerators as acc

order := ["exclusive", "shared", "sliced", "partitioned"]

present(f) if {
	some c in acc.claims
	some k, _ in c.limits
	some b in acc.bases
	acc.family(k, b) == f
}

found := [f | some f in order; present(f)]

groups := {c.group |
	some c in acc.claims
	some k, _ in c.limits
	acc.accelerator(k)
}

violation contains {"msg": msg} if {
	acc.judged
	count(found) > 1
	msg := sprintf("spec: Forbidden: a Pod may request only one accelerator family, found [%s]", [concat(" ", found)])
}

violation contains {"msg": msg} if {
	acc.judged
	count(groups) > 1
	msg := concat(" ", [
		"spec.initContainers: Forbidden: a Pod's accelerator requests must all sit in one container group;",
		"spec.initContainers must give up its request, because its devices are held for the Pod's whole life while",
		"the scheduler charges the Pod only once",
	])
}
