/*
 * A stand-in for NVIDIA's libnvidia-ml.so.1 on a simulated node: the part of NVML the device manager calls,
 * answering from a fixture file beside the library (libnvidia-ml.fixture) instead of a driver. It is the
 * simulated hardware, nothing more: the agent loads it with go-nvml exactly as it loads the real library.
 *
 * The fixture, one fact a line:
 *   driver 580.159.03
 *   cuda 13000
 *   card <uuid>|<name>|<memory MiB>|<cores>|<architecture (NVML_DEVICE_ARCH_*)>|<cc major>|<cc minor>
 *   mig <uuid>|<profile>|<profile ID>|<name>|<memory MiB>|<compute slices>|<instances>|<memory slices>|<start>,<start>,...
 *
 * A card with mig lines (after its card line) is in MIG mode, current and pending; one without has no MIG
 * (NVML_ERROR_NOT_SUPPORTED), as the T4 and A10G. Each mig line is one GPU-instance profile of the card:
 * <profile> is the NVML_GPU_INSTANCE_PROFILE_* constant nvmlDeviceGetGpuInstanceProfileInfo answers for,
 * <profile ID> the ID the driver gives it (nvidia-smi mig -lgip's ID column: 1g.10gb is constant 0, ID 19
 * on an H100), which the MIG calls take; <name> as nvidia-smi names it (1g.10gb); <instances> how many an
 * empty card holds; <memory slices> the size of each placement, whose legal starts end the line. Engine and
 * multiprocessor counts are left 0: the fixture does not carry them and the agent does not read them.
 *
 * GPU and compute instances are the driver's state. The real driver keeps them in the kernel; this stand-in
 * keeps them in the memory of the process that loaded it (the node's directory is read-only, and the agent is
 * the only process that creates them), so an agent that restarts finds none: the orphans a real card would
 * still hold are gone. They outlive nvmlShutdown and the dlclose go-nvml makes after the last one, as the
 * library pins itself (RTLD_NODELETE) at its first init: a caller bound to it through its PLT, as go-nvml's
 * cgo calls are, keeps it loaded anyway, but one that looks its calls up with dlsym would unload it. They
 * follow their card by UUID across the re-read of the fixture at the next first init.
 *
 * A GPU instance's ID is its placement's node in the binary tree of the card's memory slices, as the driver's
 * are: 0 for all of them (7g.80gb), 1 and 2 for the halves, 3 to 6 for the quarters, 7 to 14 for single
 * slices (the tree order here; a real A100 numbers the upper half first, slice 4's 1g.5gb being ID 7). A
 * compute instance takes the lowest ID free in its GPU instance, 0 for the first, as the driver does. So
 * the device names the agent builds, MIG-<GPU UUID>/<GPU instance>/<compute instance>, look like a real card's.
 *
 * nvmlInit and nvmlShutdown are counted, as NVML's are: the fixture is read at the first init and the library
 * is usable until the last shutdown, so the agent's detection and its MIG calls may overlap.
 *
 * Built by the Makefile: gcc -shared -fPIC -o bin/libnvidia-ml.so.1 hack/nvml-standin/libnvidia-ml.c
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
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
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_UNKNOWN = 999,
};

enum {
	NVML_DEVICE_MIG_ENABLE = 1,
	NVML_GPU_INSTANCE_PROFILE_COUNT = 0x12,
	NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 0x9,
	NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT = 0x1,
	NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96,
};

#define MAX_CARDS 64
#define MAX_PROFILES 18 /* NVML_GPU_INSTANCE_PROFILE_COUNT */
#define MAX_PLACEMENTS 16
/* A card holds at most one GPU instance per memory slice, a GPU instance one compute instance per slice. */
#define MAX_GPU_INSTANCES (MAX_CARDS * 8)
#define MAX_COMPUTE_INSTANCES (MAX_GPU_INSTANCES * 8)

struct profile {
	unsigned int profile, id;
	char name[64];
	unsigned long long memory_mib;
	unsigned int slices, instances, size, nstarts, starts[MAX_PLACEMENTS];
};

struct card {
	char uuid[96];
	char name[96];
	unsigned long long memory_mib;
	unsigned int cores, arch;
	int cc_major, cc_minor;
	/* MIG: the card's profiles (none when it is not in MIG mode), its memory and compute slices, and whether
	 * its GPU instances take the driver's tree IDs (every placement aligned in a power-of-two card). */
	unsigned int nprofiles, memory_slices, compute_slices, tree_ids;
	struct profile profiles[MAX_PROFILES];
};

struct gpu_instance {
	int used;
	char card[96]; /* the card's UUID: the instance outlives the re-read of the fixture */
	unsigned int id, profile_id, start, size, slices;
};

struct compute_instance {
	int used;
	struct gpu_instance *gi;
	unsigned int id, profile_id, start, size;
};

static struct card cards[MAX_CARDS];
static unsigned int ncards;
static char driver[80], fixture_error[256];
static int cuda, initialised;
static struct gpu_instance gpu_instances[MAX_GPU_INSTANCES];
static struct compute_instance compute_instances[MAX_COMPUTE_INSTANCES];
/* lock guards the init count and the MIG instances: the agent's detection and its MIG calls run on their own
 * threads. The cards themselves change only at the first init, when nobody holds the library. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int malformed(const char *path, const char *line, const char *why)
{
	snprintf(fixture_error, sizeof fixture_error, "%s: %s: %s", path, why, line);
	return NVML_ERROR_UNKNOWN;
}

/* mig reads one mig line into its card's profiles. */
static int mig(const char *path, const char *line)
{
	char uuid[96], starts[128];
	struct profile p = {0};
	if (sscanf(line + 4, "%95[^|]|%u|%u|%63[^|]|%llu|%u|%u|%u|%127s", uuid, &p.profile, &p.id, p.name, &p.memory_mib,
		   &p.slices, &p.instances, &p.size, starts) != 9)
		return malformed(path, line, "malformed line");
	struct card *c = NULL;
	for (unsigned int i = 0; i < ncards; i++)
		if (!strcmp(cards[i].uuid, uuid))
			c = &cards[i];
	if (!c)
		return malformed(path, line, "no card line before it");
	if (p.profile >= NVML_GPU_INSTANCE_PROFILE_COUNT || !p.slices || p.slices > 64 || !p.size || p.size > 64 ||
	    c->nprofiles == MAX_PROFILES)
		return malformed(path, line, "impossible profile");
	for (unsigned int i = 0; i < c->nprofiles; i++)
		if (c->profiles[i].profile == p.profile || c->profiles[i].id == p.id)
			return malformed(path, line, "profile given twice");
	/* The starts, and how many instances fit at once, which bounds the GPU instances the profile lists. */
	unsigned int fit = 0, next = 0;
	for (char *s = starts, *end; *s; s = *end == ',' ? end + 1 : end) {
		unsigned long start = strtoul(s, &end, 10);
		if (end == s || (*end && *end != ',') || start + p.size > 64 || p.nstarts == MAX_PLACEMENTS)
			return malformed(path, line, "bad placements");
		p.starts[p.nstarts++] = (unsigned int)start;
		if (start >= next) {
			fit++;
			next = (unsigned int)start + p.size;
		}
		if (next > c->memory_slices)
			c->memory_slices = next;
	}
	if (!p.nstarts || p.instances < fit)
		return malformed(path, line, "fewer instances than placements that fit");
	if (p.slices > c->compute_slices)
		c->compute_slices = p.slices;
	c->profiles[c->nprofiles++] = p;
	return NVML_SUCCESS;
}

/* tree reports whether every placement of the card is a node of the binary tree of its memory slices. */
static int tree(const struct card *c)
{
	if (c->memory_slices & (c->memory_slices - 1))
		return 0;
	for (unsigned int i = 0; i < c->nprofiles; i++) {
		const struct profile *p = &c->profiles[i];
		for (unsigned int j = 0; j < p->nstarts; j++)
			if ((p->size & (p->size - 1)) || p->starts[j] % p->size)
				return 0;
	}
	return 1;
}

/* load reads the fixture beside this library; it fails when the fixture is missing or malformed. */
static int load(void)
{
	Dl_info info;
	char path[4096];
	if (!dladdr((void *)load, &info) || !info.dli_fname)
		return NVML_ERROR_UNKNOWN;
	/* Pinned, the library keeps its MIG instances when go-nvml closes it after the last shutdown. */
	void *self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
	if (self)
		dlclose(self);
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
	int ret = NVML_SUCCESS;
	while (ret == NVML_SUCCESS && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "driver ", 7)) {
			snprintf(driver, sizeof driver, "%s", line + 7);
		} else if (!strncmp(line, "cuda ", 5)) {
			cuda = atoi(line + 5);
		} else if (!strncmp(line, "card ", 5) && ncards < MAX_CARDS) {
			struct card *c = &cards[ncards];
			memset(c, 0, sizeof *c);
			if (sscanf(line + 5, "%95[^|]|%95[^|]|%llu|%u|%u|%d|%d", c->uuid, c->name, &c->memory_mib, &c->cores,
				   &c->arch, &c->cc_major, &c->cc_minor) != 7)
				ret = malformed(path, line, "malformed line");
			ncards++;
		} else if (!strncmp(line, "mig ", 4)) {
			ret = mig(path, line);
		}
	}
	fclose(f);
	for (unsigned int i = 0; i < ncards; i++)
		cards[i].tree_ids = tree(&cards[i]);
	return ret;
}

int nvmlInit_v2(void)
{
	pthread_mutex_lock(&lock);
	int ret = initialised ? NVML_SUCCESS : load();
	if (ret == NVML_SUCCESS)
		initialised++;
	pthread_mutex_unlock(&lock);
	return ret;
}
int nvmlInit(void) { return nvmlInit_v2(); }
int nvmlInitWithFlags(unsigned int flags) { (void)flags; return nvmlInit_v2(); }
int nvmlShutdown(void)
{
	pthread_mutex_lock(&lock);
	int ret = initialised ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
	if (initialised)
		initialised--;
	pthread_mutex_unlock(&lock);
	return ret;
}

const char *nvmlErrorString(int ret)
{
	switch (ret) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_IN_USE: return "In use by another client";
	case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient Resources";
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

/* card finds a card by UUID; NULL when the fixture has none. */
static struct card *card(const char *uuid)
{
	for (unsigned int i = 0; i < ncards; i++)
		if (!strcmp(cards[i].uuid, uuid))
			return &cards[i];
	return NULL;
}

int nvmlDeviceGetHandleByUUID(const char *uuid, struct card **device)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!uuid || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = card(uuid);
	return *device ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND;
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

/* A card with profiles is in MIG mode; the others have no MIG (the walkthrough's T4 and A10G have none). */
int nvmlDeviceGetMigMode(struct card *c, unsigned int *current, unsigned int *pending)
{
	if (!valid(c) || !current || !pending)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!c->nprofiles)
		return NVML_ERROR_NOT_SUPPORTED;
	*current = *pending = NVML_DEVICE_MIG_ENABLE;
	return NVML_SUCCESS;
}

/* The structures below are NVML's, byte for byte (nvml.h); the asserts hold them to go-nvml's sizes. */

struct placement { unsigned int start, size; }; /* nvmlGpuInstancePlacement_t, nvmlComputeInstancePlacement_t */

struct gpu_instance_profile_info { /* nvmlGpuInstanceProfileInfo_t */
	unsigned int id, is_p2p_supported, slice_count, instance_count, multiprocessor_count, copy_engine_count,
		decoder_count, encoder_count, jpeg_count, ofa_count;
	unsigned long long memory_size_mb;
};

struct gpu_instance_profile_info_v2 { /* nvmlGpuInstanceProfileInfo_v2_t */
	unsigned int version, id, is_p2p_supported, slice_count, instance_count, multiprocessor_count, copy_engine_count,
		decoder_count, encoder_count, jpeg_count, ofa_count;
	unsigned long long memory_size_mb;
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
};

struct gpu_instance_profile_info_v3 { /* nvmlGpuInstanceProfileInfo_v3_t: no isP2pSupported, capabilities */
	unsigned int version, id, slice_count, instance_count, multiprocessor_count, copy_engine_count, decoder_count,
		encoder_count, jpeg_count, ofa_count;
	unsigned long long memory_size_mb;
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	unsigned int capabilities;
};

struct gpu_instance_info { /* nvmlGpuInstanceInfo_t */
	struct card *device;
	unsigned int id, profile_id;
	struct placement placement;
};

struct compute_instance_profile_info { /* nvmlComputeInstanceProfileInfo_t */
	unsigned int id, slice_count, instance_count, multiprocessor_count, shared_copy_engine_count,
		shared_decoder_count, shared_encoder_count, shared_jpeg_count, shared_ofa_count;
};

struct compute_instance_info { /* nvmlComputeInstanceInfo_t; the version 1 call has no placement */
	struct card *device;
	struct gpu_instance *gpu_instance;
	unsigned int id, profile_id;
	struct placement placement;
};

_Static_assert(sizeof(struct placement) == 8, "nvmlGpuInstancePlacement_t");
_Static_assert(sizeof(struct gpu_instance_profile_info) == 48, "nvmlGpuInstanceProfileInfo_t");
_Static_assert(sizeof(struct gpu_instance_profile_info_v2) == 152, "nvmlGpuInstanceProfileInfo_v2_t");
_Static_assert(sizeof(struct gpu_instance_profile_info_v3) == 152, "nvmlGpuInstanceProfileInfo_v3_t");
_Static_assert(sizeof(struct gpu_instance_info) == 24, "nvmlGpuInstanceInfo_t");
_Static_assert(sizeof(struct compute_instance_profile_info) == 36, "nvmlComputeInstanceProfileInfo_t");
_Static_assert(sizeof(struct compute_instance_info) == 32, "nvmlComputeInstanceInfo_t");

/* NVML_STRUCT_VERSION: the versioned calls take the structure's size and version in its first field. */
#define STRUCT_VERSION(s, v) ((unsigned int)sizeof(s) | (v) << 24U)

/* mig_card checks a card handle for a MIG call: NOT_SUPPORTED for a card not in MIG mode. */
static int mig_card(const struct card *c)
{
	if (!initialised)
		return NVML_ERROR_UNINITIALIZED;
	if (!valid(c))
		return NVML_ERROR_INVALID_ARGUMENT;
	return c->nprofiles ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

/* by_constant and by_id find a card's profile by its NVML_GPU_INSTANCE_PROFILE_* constant or by its ID. */
static const struct profile *by_constant(const struct card *c, unsigned int profile)
{
	for (unsigned int i = 0; i < c->nprofiles; i++)
		if (c->profiles[i].profile == profile)
			return &c->profiles[i];
	return NULL;
}
static const struct profile *by_id(const struct card *c, unsigned int id)
{
	for (unsigned int i = 0; i < c->nprofiles; i++)
		if (c->profiles[i].id == id)
			return &c->profiles[i];
	return NULL;
}

/* Past the constants NVML knows, INVALID_ARGUMENT ends an enumeration; a profile this card lacks is NOT_SUPPORTED. */
static int profile_of(const struct card *c, unsigned int profile, const struct profile **p)
{
	int ret = mig_card(c);
	if (ret == NVML_ERROR_INVALID_ARGUMENT || ret == NVML_ERROR_UNINITIALIZED)
		return ret;
	if (profile >= NVML_GPU_INSTANCE_PROFILE_COUNT)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (ret != NVML_SUCCESS)
		return ret;
	*p = by_constant(c, profile);
	return *p ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

int nvmlDeviceGetGpuInstanceProfileInfo(struct card *c, unsigned int profile, struct gpu_instance_profile_info *info)
{
	const struct profile *p = NULL;
	int ret = profile_of(c, profile, &p);
	if (ret != NVML_SUCCESS)
		return ret;
	if (!info)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(info, 0, sizeof *info);
	info->id = p->id;
	info->slice_count = p->slices;
	info->instance_count = p->instances;
	info->memory_size_mb = p->memory_mib;
	return NVML_SUCCESS;
}

/* The versioned call fills a version 2 or 3 structure, told apart by its version field; the name is NVML's
 * ("MIG 1g.10gb"). */
int nvmlDeviceGetGpuInstanceProfileInfoV(struct card *c, unsigned int profile, void *info)
{
	const struct profile *p = NULL;
	int ret = profile_of(c, profile, &p);
	if (ret != NVML_SUCCESS)
		return ret;
	if (!info)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned int version = *(unsigned int *)info;
	if (version == STRUCT_VERSION(struct gpu_instance_profile_info_v2, 2)) {
		struct gpu_instance_profile_info_v2 *v2 = info;
		*v2 = (struct gpu_instance_profile_info_v2){.version = version, .id = p->id, .slice_count = p->slices,
			.instance_count = p->instances, .memory_size_mb = p->memory_mib};
		snprintf(v2->name, sizeof v2->name, "MIG %s", p->name);
	} else if (version == STRUCT_VERSION(struct gpu_instance_profile_info_v3, 3)) {
		struct gpu_instance_profile_info_v3 *v3 = info;
		*v3 = (struct gpu_instance_profile_info_v3){.version = version, .id = p->id, .slice_count = p->slices,
			.instance_count = p->instances, .memory_size_mb = p->memory_mib};
		snprintf(v3->name, sizeof v3->name, "MIG %s", p->name);
	} else {
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	return NVML_SUCCESS;
}

/* The placements of a profile: NULL asks for their number. A buffer smaller than *count says is refused
 * rather than overrun. */
int nvmlDeviceGetGpuInstancePossiblePlacements_v2(struct card *c, unsigned int id, struct placement *placements,
						  unsigned int *count)
{
	int ret = mig_card(c);
	if (ret != NVML_SUCCESS)
		return ret;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	const struct profile *p = by_id(c, id);
	if (!p)
		return NVML_ERROR_NOT_SUPPORTED;
	if (placements && *count < p->nstarts) {
		*count = p->nstarts;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	*count = p->nstarts;
	for (unsigned int i = 0; placements && i < p->nstarts; i++)
		placements[i] = (struct placement){p->starts[i], p->size};
	return NVML_SUCCESS;
}
/* The version 1 call answered only in MIG mode, which is the only mode with placements here. */
int nvmlDeviceGetGpuInstancePossiblePlacements(struct card *c, unsigned int id, struct placement *placements,
					       unsigned int *count)
{
	return nvmlDeviceGetGpuInstancePossiblePlacements_v2(c, id, placements, count);
}

/* live_gpu reports whether a handle is a GPU instance that exists, on a card the fixture still has. */
static struct card *live_gpu(const struct gpu_instance *gi)
{
	if (!initialised || gi < gpu_instances || gi >= gpu_instances + MAX_GPU_INSTANCES || !gi->used)
		return NULL;
	return card(gi->card);
}

static unsigned long long span(unsigned int start, unsigned int size)
{
	return (size >= 64 ? ~0ULL : (1ULL << size) - 1) << start;
}

/* gpu_id is the ID the driver gives a GPU instance: its node in the tree of the card's memory slices (the
 * root, all of them, is 0; its halves 1 and 2; ...), or the lowest free ID where the card is no such tree. */
static unsigned int gpu_id(const struct card *c, unsigned int start, unsigned int size)
{
	if (c->tree_ids)
		return c->memory_slices / size - 1 + start / size;
	for (unsigned int id = 0;; id++) {
		int taken = 0;
		for (unsigned int i = 0; i < MAX_GPU_INSTANCES; i++) {
			const struct gpu_instance *g = &gpu_instances[i];
			taken |= g->used && !strcmp(g->card, c->uuid) && g->id == id;
		}
		if (!taken)
			return id;
	}
}

/* The driver refuses a placement the profile does not have (INVALID_ARGUMENT) and one whose memory slices an
 * instance holds, or that needs more compute slices than are free (INSUFFICIENT_RESOURCES). */
int nvmlDeviceCreateGpuInstanceWithPlacement(struct card *c, unsigned int id, const struct placement *placement,
					     struct gpu_instance **out)
{
	pthread_mutex_lock(&lock);
	int ret = mig_card(c);
	const struct profile *p = ret == NVML_SUCCESS ? by_id(c, id) : NULL;
	if (ret == NVML_SUCCESS && (!p || !placement || !out || placement->size != p->size))
		ret = NVML_ERROR_INVALID_ARGUMENT;
	if (ret == NVML_SUCCESS) {
		int legal = 0;
		for (unsigned int i = 0; i < p->nstarts; i++)
			legal |= p->starts[i] == placement->start;
		ret = legal ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
	}
	struct gpu_instance *free_slot = NULL;
	if (ret == NVML_SUCCESS) {
		unsigned long long held = 0;
		unsigned int slices = 0;
		for (unsigned int i = 0; i < MAX_GPU_INSTANCES; i++) {
			struct gpu_instance *g = &gpu_instances[i];
			if (!g->used) {
				free_slot = free_slot ? free_slot : g;
			} else if (!strcmp(g->card, c->uuid)) {
				held |= span(g->start, g->size);
				slices += g->slices;
			}
		}
		if (!free_slot || held & span(placement->start, placement->size) || slices + p->slices > c->compute_slices)
			ret = NVML_ERROR_INSUFFICIENT_RESOURCES;
	}
	if (ret == NVML_SUCCESS) {
		*free_slot = (struct gpu_instance){.used = 1, .id = gpu_id(c, placement->start, placement->size),
			.profile_id = p->id, .start = placement->start, .size = placement->size, .slices = p->slices};
		snprintf(free_slot->card, sizeof free_slot->card, "%s", c->uuid);
		*out = free_slot;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

/* A GPU instance with compute instances is in use, as it is on the real driver. */
int nvmlGpuInstanceDestroy(struct gpu_instance *gi)
{
	pthread_mutex_lock(&lock);
	int ret = live_gpu(gi) ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned int i = 0; ret == NVML_SUCCESS && i < MAX_COMPUTE_INSTANCES; i++)
		if (compute_instances[i].used && compute_instances[i].gi == gi)
			ret = NVML_ERROR_IN_USE;
	if (ret == NVML_SUCCESS)
		gi->used = 0;
	pthread_mutex_unlock(&lock);
	return ret;
}

/* The card's GPU instances of a profile, by ID. The buffer must hold the profile's instance count, as NVML
 * asks; the fixture's count is never below what fits, so it does. */
int nvmlDeviceGetGpuInstances(struct card *c, unsigned int id, struct gpu_instance **out, unsigned int *count)
{
	pthread_mutex_lock(&lock);
	int ret = mig_card(c);
	if (ret == NVML_SUCCESS && (!out || !count || !by_id(c, id)))
		ret = NVML_ERROR_INVALID_ARGUMENT;
	if (ret == NVML_SUCCESS) {
		unsigned int n = 0;
		for (unsigned int i = 0; i < MAX_GPU_INSTANCES; i++) {
			struct gpu_instance *g = &gpu_instances[i];
			if (!g->used || g->profile_id != id || strcmp(g->card, c->uuid))
				continue;
			unsigned int at = n++;
			for (; at > 0 && out[at - 1]->id > g->id; at--)
				out[at] = out[at - 1];
			out[at] = g;
		}
		*count = n;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

int nvmlGpuInstanceGetInfo(struct gpu_instance *gi, struct gpu_instance_info *info)
{
	pthread_mutex_lock(&lock);
	struct card *c = live_gpu(gi);
	int ret = c && info ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
	if (ret == NVML_SUCCESS)
		*info = (struct gpu_instance_info){c, gi->id, gi->profile_id, {gi->start, gi->size}};
	pthread_mutex_unlock(&lock);
	return ret;
}

/* The compute slices of each NVML_COMPUTE_INSTANCE_PROFILE_* constant; 0 for 1_SLICE_REV1 and 7_SLICE_NVL,
 * which this stand-in does not offer. A compute profile's ID is its constant, as on the real driver. */
static unsigned int compute_slices(unsigned int profile)
{
	static const unsigned int slices[NVML_COMPUTE_INSTANCE_PROFILE_COUNT] = {1, 2, 3, 4, 7, 8, 6, 0, 0};
	return profile < NVML_COMPUTE_INSTANCE_PROFILE_COUNT ? slices[profile] : 0;
}

/* A compute profile is offered in a GPU instance with at least its slices, as many times as it fits. */
int nvmlGpuInstanceGetComputeInstanceProfileInfo(struct gpu_instance *gi, unsigned int profile,
						  unsigned int eng_profile, struct compute_instance_profile_info *info)
{
	pthread_mutex_lock(&lock);
	int ret = live_gpu(gi) && info && profile < NVML_COMPUTE_INSTANCE_PROFILE_COUNT &&
				  eng_profile < NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT
			  ? NVML_SUCCESS
			  : NVML_ERROR_INVALID_ARGUMENT;
	unsigned int slices = compute_slices(profile);
	if (ret == NVML_SUCCESS && (!slices || slices > gi->slices))
		ret = NVML_ERROR_NOT_SUPPORTED;
	if (ret == NVML_SUCCESS)
		*info = (struct compute_instance_profile_info){.id = profile, .slice_count = slices,
			.instance_count = gi->slices / slices};
	pthread_mutex_unlock(&lock);
	return ret;
}

/* A compute instance takes the first free run of its slices in the GPU instance, at a multiple of its size,
 * and the lowest ID free there (the first is 0); INSUFFICIENT_RESOURCES when none is free. */
int nvmlGpuInstanceCreateComputeInstance(struct gpu_instance *gi, unsigned int profile, struct compute_instance **out)
{
	pthread_mutex_lock(&lock);
	int ret = live_gpu(gi) && out ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
	unsigned int slices = compute_slices(profile);
	if (ret == NVML_SUCCESS && (!slices || slices > gi->slices))
		ret = NVML_ERROR_NOT_SUPPORTED;
	if (ret != NVML_SUCCESS) {
		pthread_mutex_unlock(&lock);
		return ret;
	}
	struct compute_instance *free_slot = NULL;
	unsigned long long held = 0, ids = 0;
	for (unsigned int i = 0; i < MAX_COMPUTE_INSTANCES; i++) {
		struct compute_instance *ci = &compute_instances[i];
		if (!ci->used) {
			free_slot = free_slot ? free_slot : ci;
		} else if (ci->gi == gi) {
			held |= span(ci->start, ci->size);
			ids |= 1ULL << ci->id;
		}
	}
	unsigned int start = 0, id = 0;
	while (start + slices <= gi->slices && held & span(start, slices))
		start += slices;
	while (ids & 1ULL << id)
		id++;
	if (!free_slot || start + slices > gi->slices)
		ret = NVML_ERROR_INSUFFICIENT_RESOURCES;
	if (ret == NVML_SUCCESS) {
		*free_slot = (struct compute_instance){.used = 1, .gi = gi, .id = id, .profile_id = profile,
			.start = start, .size = slices};
		*out = free_slot;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

/* live_compute reports whether a handle is a compute instance that exists. */
static int live_compute(const struct compute_instance *ci)
{
	return ci >= compute_instances && ci < compute_instances + MAX_COMPUTE_INSTANCES && ci->used && live_gpu(ci->gi);
}

/* No process runs on a simulated compute instance, so it is never in use. */
int nvmlComputeInstanceDestroy(struct compute_instance *ci)
{
	pthread_mutex_lock(&lock);
	int ret = live_compute(ci) ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
	if (ret == NVML_SUCCESS)
		ci->used = 0;
	pthread_mutex_unlock(&lock);
	return ret;
}

/* The GPU instance's compute instances of a profile, by ID; the buffer holds the profile's instance count. */
int nvmlGpuInstanceGetComputeInstances(struct gpu_instance *gi, unsigned int profile, struct compute_instance **out,
				       unsigned int *count)
{
	pthread_mutex_lock(&lock);
	int ret = live_gpu(gi) && out && count ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
	unsigned int slices = compute_slices(profile);
	if (ret == NVML_SUCCESS && (!slices || slices > gi->slices))
		ret = NVML_ERROR_NOT_SUPPORTED;
	if (ret == NVML_SUCCESS) {
		unsigned int n = 0;
		for (unsigned int i = 0; i < MAX_COMPUTE_INSTANCES; i++) {
			struct compute_instance *ci = &compute_instances[i];
			if (!ci->used || ci->gi != gi || ci->profile_id != profile)
				continue;
			unsigned int at = n++;
			for (; at > 0 && out[at - 1]->id > ci->id; at--)
				out[at] = out[at - 1];
			out[at] = ci;
		}
		*count = n;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

/* The version 1 call fills the structure without its placement, which version 2 added. */
static int compute_info(struct compute_instance *ci, struct compute_instance_info *info, size_t size)
{
	pthread_mutex_lock(&lock);
	int ret = live_compute(ci) && info ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
	if (ret == NVML_SUCCESS) {
		struct compute_instance_info full = {card(ci->gi->card), ci->gi, ci->id, ci->profile_id, {ci->start, ci->size}};
		memcpy(info, &full, size);
	}
	pthread_mutex_unlock(&lock);
	return ret;
}
int nvmlComputeInstanceGetInfo_v2(struct compute_instance *ci, struct compute_instance_info *info)
{
	return compute_info(ci, info, sizeof *info);
}
int nvmlComputeInstanceGetInfo(struct compute_instance *ci, struct compute_instance_info *info)
{
	return compute_info(ci, info, offsetof(struct compute_instance_info, placement));
}
