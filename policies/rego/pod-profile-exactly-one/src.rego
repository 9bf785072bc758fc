# Rule 5: each per-profile key asks for exactly one instance.
package gpustack.pod_profile_exactly_one

import data.lib.accelerators as acc

profile_key(k) if {
	some b in acc.bases
	startswith(k, concat("", [b, ".partitioned."]))
	k != concat("", [b, ".partitioned.units"])
}

too_many := [{"path": c.path, "key": k, "value": acc.text(v)} |
	some c in acc.claims
	some k, v in c.limits
	profile_key(k)
	acc.quantity(v) != 1
]

violation contains {"msg": msg} if {
	acc.judged
	t := too_many[0]
	msg := sprintf("%s[%s]: Invalid value: %q: a partition profile request must be exactly 1 instance", [t.path, t.key, t.value])
}
