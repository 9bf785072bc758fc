# Rule 3: a hardware partition is one accelerator and names its profile.
package gpustack.pod_partitioned_single

import data.lib.accelerators as acc

# partitioned are the claims that ask for a partition, each with its vendor's base resource.
partitioned := [{"path": c.path, "base": b, "limits": c.limits} |
	some c in acc.claims
	some b in sort({e.base | some e in acc.keys; e.path == c.path; acc.suffix_family(e.suffix) == "partitioned"})
]

pool_key(p) := concat("", [p.base, ".partitioned"])

one(p) if acc.quantity(p.limits[pool_key(p)]) == 1

value(p) := acc.text(p.limits[pool_key(p)])

value(p) := "0" if not pool_key(p) in object.keys(p.limits)

profile_key(p, k) if {
	startswith(k, concat("", [pool_key(p), "."]))
	k != concat("", [pool_key(p), ".units"])
}

named(p) if {
	some k, _ in p.limits
	profile_key(p, k)
}

not_one := [p | some p in partitioned; not one(p)]

no_profile := [p | some p in partitioned; not named(p)]

violation contains {"msg": msg} if {
	acc.judged
	p := not_one[0]
	msg := sprintf("%s[%s]: Invalid value: %q: a partition request is always a single accelerator; request one Pod per instance", [p.path, pool_key(p), value(p)])
}

violation contains {"msg": msg} if {
	acc.judged
	p := no_profile[0]
	msg := sprintf("%s: Required value: a %s request must name a profile, e.g. %s.<kind>-<profile>", [p.path, pool_key(p), pool_key(p)])
}
