# Gate: taking an additionalVolumes[].hostPath needs the instance-host-path-volume-allowed setting. Host paths
# are compared by value: one the Instance already had passes.
package gpustack.instance_host_path_gate

import data.lib.settings

held(v) if {
	some o in object.get(input.review, ["oldObject", "spec", "additionalVolumes"], [])
	o.hostPath == v.hostPath
}

taken := [sprintf("spec.additionalVolumes[%d].hostPath", [i]) |
	some i, v in object.get(input.review.object.spec, "additionalVolumes", [])
	v.hostPath
	not held(v)
]

violation contains {"msg": msg} if {
	settings.judged
	path := taken[0]
	not settings.enabled("instance-host-path-volume-allowed")
	msg := sprintf("%s: Forbidden: host path volumes are not allowed: enable the \"instance-host-path-volume-allowed\" setting to allow it", [path])
}
