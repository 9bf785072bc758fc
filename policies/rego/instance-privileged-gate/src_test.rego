package gpustack.instance_privileged_gate_test

import data.gpustack.instance_privileged_gate
import data.lib.testing as t

test_denied_while_off if {
	instance_privileged_gate.violation == {{"msg": "spec.privileged: Forbidden: privileged mode is not allowed: enable the \"instance-privileged-allowed\" setting to allow it"}} with input.review as t.instance({"privileged": true})
		with data.inventory as t.settings({"instance-privileged-allowed": "false"})
}

test_allowed_while_on if {
	count(instance_privileged_gate.violation) == 0 with input.review as t.instance({"privileged": true})
		with data.inventory as t.settings({"instance-privileged-allowed": "true"})
}

test_existing_grant_kept if {
	count(instance_privileged_gate.violation) == 0 with input.review as t.update({"privileged": true, "stop": true}, {"privileged": true})
		with data.inventory as t.settings({})
}
