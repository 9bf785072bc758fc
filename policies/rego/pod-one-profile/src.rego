# Rule 4: one partition profile per Pod.
package gpustack.pod_one_profile

import data.lib.accelerators as acc

# profile returns the profile of a per-profile key's suffix: .partitioned.<kind>-<profile> -> <profile>.
profile(suffix) := strip_kind(rest) if {
	startswith(suffix, ".partitioned.")
	rest := substring(suffix, 13, -1)
	rest != "units"
}

strip_kind(rest) := substring(rest, indexof(rest, "-") + 1, -1) if indexof(rest, "-") >= 0

strip_kind(rest) := rest if indexof(rest, "-") < 0

profiles := sort({profile(e.suffix) | some e in acc.keys})

violation contains {"msg": msg} if {
	acc.judged
	count(profiles) > 1
	msg := sprintf("spec: Forbidden: a Pod may request only one partition profile, found [%s]", [concat(" ", profiles)])
}
