# Rule 1: one accelerator family per Pod, in one container group.
package gpustack.pod_one_family

import data.lib.accelerators as acc

order := ["exclusive", "shared", "sliced", "partitioned"]

present(f) if {
	some e in acc.keys
	acc.suffix_family(e.suffix) == f
}

found := [f | some f in order; present(f)]

groups := {e.group | some e in acc.keys}

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
