// Package openapi holds the OpenAPI definitions of settings.gpustack.ai/v1 and the meta types it uses, which the
// worker's settings API server publishes (kubectl explain, server-side apply). make generate writes them.
package openapi
