/*
 * A stand-in for NVIDIA's libnvidia-ml.so.1 on a simulated node: the part of NVML the device agent calls,
 * answering from a fixture file beside the library (libnvidia-ml.fixture) instead of a driver. It is the
 * simulated hardware, nothing more: the agent loads it with go-nvml exactly as it loads the real library.
 *
 * The fixture, one fact a line:
 *   driver 580.159.03
 *   cuda 13000
 *   card <uuid>|<name>|<memory MiB>|<cores>|<architecture (NVML_DEVICE_ARCH_*)>|<cc major>|<cc minor>
 *
 * Built by the Makefile: gcc -shared -fPIC -o bin/libnvidia-ml.so.1 hack/nvml-standin/libnvidia-ml.c
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_UNKNOWN = 999,
};

#define MAX_CARDS 64

struct card {
	char uuid[96];
	char name[96];
	unsigned long long memory_mib;
	unsigned int cores, arch;
	int cc_major, cc_minor;
};

static struct card cards[MAX_CARDS];
static unsigned int ncards;
static char driver[80], fixture_error[256];
static int cuda, initialised;

/* load reads the fixture beside this library; it fails when the fixture is missing or malformed. */
static int load(void)
{
	Dl_info info;
	char path[4096];
	if (!dladdr((void *)load, &info) || !info.dli_fname)
		return NVML_ERROR_UNKNOWN;
	snprintf(path, sizeof path, "%s", info.dli_fname);
	char *slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof path - (slash ? (size_t)(slash + 1 - path) : 0), "libnvidia-ml.fixture");
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(fixture_error, sizeof fixture_error, "cannot open %s", path);
		return NVML_ERROR_UNKNOWN;
	}
	char line[512];
	ncards = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "driver ", 7)) {
			snprintf(driver, sizeof driver, "%s", line + 7);
		} else if (!strncmp(line, "cuda ", 5)) {
			cuda = atoi(line + 5);
		} else if (!strncmp(line, "card ", 5) && ncards < MAX_CARDS) {
			struct card *c = &cards[ncards];
			if (sscanf(line + 5, "%95[^|]|%95[^|]|%llu|%u|%u|%d|%d", c->uuid, c->name, &c->memory_mib, &c->cores,
				   &c->arch, &c->cc_major, &c->cc_minor) != 7) {
				snprintf(fixture_error, sizeof fixture_error, "%s: malformed line: %s", path, line);
				fclose(f);
				return NVML_ERROR_UNKNOWN;
			}
			ncards++;
		}
	}
	fclose(f);
	return NVML_SUCCESS;
}

int nvmlInit_v2(void)
{
	int ret = load();
	initialised = ret == NVML_SUCCESS;
	return ret;
}
int nvmlInit(void) { return nvmlInit_v2(); }
int nvmlInitWithFlags(unsigned int flags) { (void)flags; return nvmlInit_v2(); }
int nvmlShutdown(void) { initialised = 0; return NVML_SUCCESS; }

const char *nvmlErrorString(int ret)
{
	switch (ret) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	default: return fixture_error[0] ? fixture_error : "Unknown Error";
	}
}

static int copy(char *dst, unsigned int length, const char *src)
{
	if (!dst)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(src) + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	strcpy(dst, src);
	return NVML_SUCCESS;
}

int nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	return initialised ? copy(version, length, driver) : NVML_ERROR_UNINITIALIZED;
}
int nvmlSystemGetCudaDriverVersion(int *version)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!version)
		return NVML_ERROR_INVALID_ARGUMENT;
	*version = cuda;
	return NVML_SUCCESS;
}
int nvmlSystemGetCudaDriverVersion_v2(int *version) { return nvmlSystemGetCudaDriverVersion(version); }

int nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = ncards;
	return NVML_SUCCESS;
}
int nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, struct card **device)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= ncards)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &cards[index];
	return NVML_SUCCESS;
}
int nvmlDeviceGetHandleByIndex(unsigned int index, struct card **device) { return nvmlDeviceGetHandleByIndex_v2(index, device); }

int nvmlDeviceGetHandleByUUID(const char *uuid, struct card **device)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!uuid || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned int i = 0; i < ncards; i++) {
		if (!strcmp(cards[i].uuid, uuid)) {
			*device = &cards[i];
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

/* valid reports whether a handle is one of the fixture's cards. */
static int valid(const struct card *c) { return initialised && c >= cards && c < cards + ncards; }

int nvmlDeviceGetIndex(struct card *c, unsigned int *index)
{
	if (!valid(c) || !index)
		return NVML_ERROR_INVALID_ARGUMENT;
	*index = (unsigned int)(c - cards);
	return NVML_SUCCESS;
}
int nvmlDeviceGetMinorNumber(struct card *c, unsigned int *minor) { return nvmlDeviceGetIndex(c, minor); }
int nvmlDeviceGetUUID(struct card *c, char *uuid, unsigned int length)
{
	return valid(c) ? copy(uuid, length, c->uuid) : NVML_ERROR_INVALID_ARGUMENT;
}
int nvmlDeviceGetName(struct card *c, char *name, unsigned int length)
{
	return valid(c) ? copy(name, length, c->name) : NVML_ERROR_INVALID_ARGUMENT;
}

struct memory { unsigned long long total, free, used; };

int nvmlDeviceGetMemoryInfo(struct card *c, struct memory *m)
{
	if (!valid(c) || !m)
		return NVML_ERROR_INVALID_ARGUMENT;
	m->total = m->free = c->memory_mib << 20;
	m->used = 0;
	return NVML_SUCCESS;
}
int nvmlDeviceGetNumGpuCores(struct card *c, unsigned int *cores)
{
	if (!valid(c) || !cores)
		return NVML_ERROR_INVALID_ARGUMENT;
	*cores = c->cores;
	return NVML_SUCCESS;
}
int nvmlDeviceGetArchitecture(struct card *c, unsigned int *arch)
{
	if (!valid(c) || !arch)
		return NVML_ERROR_INVALID_ARGUMENT;
	*arch = c->arch;
	return NVML_SUCCESS;
}
int nvmlDeviceGetCudaComputeCapability(struct card *c, int *major, int *minor)
{
	if (!valid(c) || !major || !minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	*major = c->cc_major;
	*minor = c->cc_minor;
	return NVML_SUCCESS;
}
/* The fixture's cards have no MIG mode (the walkthrough's T4 and A10G have none). */
int nvmlDeviceGetMigMode(struct card *c, unsigned int *current, unsigned int *pending)
{
	(void)current;
	(void)pending;
	return valid(c) ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
}
