# Gate: taking spec.privileged needs the instance-privileged-allowed setting. An update that keeps an
# existing grant passes.
package gpustack.instance_privileged_gate

import data.lib.settings

takes if {
	input.review.object.spec.privileged == true
	not object.get(input.review, ["oldObject", "spec", "privileged"], false)
}

violation contains {"msg": msg} if {
	settings.judged
	takes
	not settings.enabled("instance-privileged-allowed")
	msg := "spec.privileged: Forbidden: privileged mode is not allowed: enable the \"instance-privileged-allowed\" setting to allow it"
}
