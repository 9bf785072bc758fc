# Rule 5: each per-profile key asks for exactly one instance.
package gpustack.pod_profile_exactly_one

import data.lib.accelerators as acc

too_many := [{"path": e.path, "key": e.key, "value": acc.text(v)} |
	some e in acc.keys
	startswith(e.suffix, ".partitioned.")
	e.suffix != ".partitioned.units"
	v := limit(e)
	acc.quantity(v) != 1
]

limit(e) := c.limits[e.key] if {
	some c in acc.claims
	c.path == e.path
}

violation contains {"msg": msg} if {
	acc.judged
	t := too_many[0]
	msg := sprintf("%s[%s]: Invalid value: %q: a partition profile request must be exactly 1 instance", [t.path, t.key, t.value])
}
