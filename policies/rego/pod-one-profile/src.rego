# Rule 4: one partition profile per Pod.
package gpustack.pod_one_profile

import data.lib.accelerators as acc

# profile returns the profile a per-profile key names: <base>.partitioned.<kind>-<profile> -> <profile>.
profile(k) := p if {
	some b in acc.bases
	prefix := concat("", [b, ".partitioned."])
	startswith(k, prefix)
	rest := substring(k, count(prefix), -1)
	rest != "units"
	p := strip_kind(rest)
}

strip_kind(rest) := substring(rest, indexof(rest, "-") + 1, -1) if indexof(rest, "-") >= 0

strip_kind(rest) := rest if indexof(rest, "-") < 0

profiles := sort({profile(k) | some c in acc.claims; some k, _ in c.limits})

violation contains {"msg": msg} if {
	acc.judged
	count(profiles) > 1
	msg := sprintf("spec: Forbidden: a Pod may request only one partition profile, found [%s]", [concat(" ", profiles)])
}
