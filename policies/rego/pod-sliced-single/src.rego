# Rule 2: a logical slice is one accelerator with exactly one memory budget in range.
package gpustack.pod_sliced_single

import data.lib.accelerators as acc

# sliced are the claims that ask for a slice, each with its vendor's base resource.
sliced := [{"path": c.path, "base": b, "limits": c.limits} |
	some c in acc.claims
	some b in sort({e.base | some e in acc.keys; e.path == c.path; acc.suffix_family(e.suffix) == "sliced"})
]

key(s, suffix) := concat("", [s.base, suffix])

value(s, suffix) := acc.text(s.limits[key(s, suffix)])

value(s, suffix) := "0" if not key(s, suffix) in object.keys(s.limits)

one(s) if acc.quantity(s.limits[key(s, ".sliced")]) == 1

not_one := [s | some s in sliced; not one(s)]

has_key(s, suffix) if key(s, suffix) in object.keys(s.limits)

no_budget := [s | some s in sliced; not has_key(s, ".sliced.memory-percentage"); not has_key(s, ".sliced.memory-mib")]

two_budgets := [s | some s in sliced; has_key(s, ".sliced.memory-percentage"); has_key(s, ".sliced.memory-mib")]

out_of_range(s, suffix) if acc.quantity(s.limits[key(s, suffix)]) <= 0

out_of_range(s, suffix) if {
	suffix != ".sliced.memory-mib"
	acc.quantity(s.limits[key(s, suffix)]) > 100
}

bound(".sliced.memory-mib") := "must be positive"

bound(suffix) := "must be greater than 0 and at most 100" if suffix != ".sliced.memory-mib"

bad_range := [{"path": s.path, "key": key(s, suffix), "value": value(s, suffix), "bound": bound(suffix)} |
	some s in sliced
	some suffix in [".sliced.memory-percentage", ".sliced.cores-percentage", ".sliced.memory-mib"]
	has_key(s, suffix)
	out_of_range(s, suffix)
]

violation contains {"msg": msg} if {
	acc.judged
	s := not_one[0]
	msg := sprintf("%s[%s.sliced]: Invalid value: %q: a logical slice request is always a single accelerator; multi-accelerator logical slicing is not supported yet", [s.path, s.base, value(s, ".sliced")])
}

violation contains {"msg": msg} if {
	acc.judged
	s := no_budget[0]
	msg := sprintf("%s: Required value: a %s.sliced request must set %s.sliced.memory-percentage or %s.sliced.memory-mib", [s.path, s.base, s.base, s.base])
}

violation contains {"msg": msg} if {
	acc.judged
	s := two_budgets[0]
	msg := sprintf("%s: Forbidden: cannot set both %s.sliced.memory-percentage and %s.sliced.memory-mib", [s.path, s.base, s.base])
}

violation contains {"msg": msg} if {
	acc.judged
	r := bad_range[0]
	msg := sprintf("%s[%s]: Invalid value: %q: %s", [r.path, r.key, r.value, r.bound])
}
