# Rule 6: at most one container claims a slicing family.
package gpustack.pod_one_slicing_container

import data.lib.accelerators as acc

slicing(c) if {
	some e in acc.keys
	e.path == c.path
	acc.suffix_family(e.suffix) in {"sliced", "partitioned"}
}

claiming := [c | some c in acc.claims; slicing(c)]

violation contains {"msg": msg} if {
	acc.judged
	count(claiming) > 1
	msg := sprintf("spec: Forbidden: at most one container may request a slicing family, found %d", [count(claiming)])
}
