-- Argo CD health of a worker.gpustack.ai Instance, read from the phase and the one-line message the
-- operator writes.
hs = {}
if obj.status == nil or obj.status.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to start the Instance"
  return hs
end
local phase = obj.status.phase
local message = obj.status.phaseMessage
if phase == "Ready" then
  hs.status = "Healthy"
  hs.message = message or "Ready"
elseif phase == "Starting" or phase == "Stopping" or phase == "Deleting" then
  hs.status = "Progressing"
  hs.message = message or phase
elseif phase == "Stopped" then
  hs.status = "Suspended"
  hs.message = message or "Stopped"
else
  hs.status = "Degraded"
  hs.message = message or ("Instance phase " .. tostring(phase))
end
return hs
