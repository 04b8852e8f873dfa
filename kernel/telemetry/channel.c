/*
 * Channels: one ring per CPU.  The producer on a CPU is whoever runs there
 * with interrupts off (emit, and a caller of tel_channel_this_ring from
 * before it until its commit, hold them off), so each ring
 * has exactly one producer at a time and no lock is needed to write.  The
 * consumer side (read, snapshot, stats) takes the channel's reader lock, so
 * two readers never move the same tail.  A flight-recorder snapshot of
 * another CPU's ring may race with its producer; it copies whole records as
 * they were when it read them (a record being overwritten at that moment may
 * come out torn, which the snapshot's consumer must tolerate).
 *
 * The registry (TEL_CHANNEL_MAX ids) lets system calls name a channel.
 *
 * A shared channel has, per ring, a header page and a position page from mm
 * next to its data pages (whole pages, so mapping them into a process gives
 * it nothing else).  They are allocated once and live as long as the
 * channel; a process that mapped them only drops its page tables at exit.
 */
#include "telemetry/internal.h"

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "panic/panic.h"
#include "proc/proc.h"
#include "time/time.h"

struct tel_channel {
	int id;
	char name[24];
	struct spinlock reader_lock;
	uint64_t bytes_per_cpu;
	int consumer_pid; /* the process it is shared with, or 0 */
	bool kernel_only; /* the kernel is its one reader: no ms_tel_read */
	struct tel_ring rings[MAX_CPUS];
	struct tel_ring_header *headers[MAX_CPUS];
	struct tel_ring_position *positions[MAX_CPUS];
};

static struct spinlock registry_lock = SPINLOCK_INIT("telemetry.registry");
static struct tel_channel *registry[TEL_CHANNEL_MAX];

static uint64_t round_up_power_of_two(uint64_t value)
{
	uint64_t size = 4096;
	while (size < value)
		size <<= 1;
	return size;
}

static int register_channel(struct tel_channel *channel)
{
	uint64_t irq = spin_lock_irqsave(&registry_lock);
	int id = -1;
	for (int i = 0; i < TEL_CHANNEL_MAX && id < 0; i++) {
		if (!registry[i]) {
			registry[i] = channel;
			id = i;
		}
	}
	spin_unlock_irqrestore(&registry_lock, irq);
	return id;
}

static void free_rings(struct tel_channel *channel)
{
	size_t pages = channel->bytes_per_cpu / PAGE_SIZE;
	for (unsigned i = 0; i < MAX_CPUS; i++) {
		if (channel->rings[i].data)
			mm_free_pages(channel->rings[i].data, pages);
		if (channel->headers[i])
			mm_free_pages(channel->headers[i], 1);
		if (channel->positions[i])
			mm_free_pages(channel->positions[i], 1);
	}
}

struct tel_channel *tel_channel_create(const char *name, uint64_t bytes_per_cpu, enum tel_mode mode)
{
	struct tel_channel *channel = kzalloc(sizeof *channel);
	if (!channel)
		return NULL;
	strlcpy(channel->name, name ? name : "telemetry", sizeof channel->name);
	spin_init(&channel->reader_lock, "telemetry.reader");
	channel->bytes_per_cpu = round_up_power_of_two(bytes_per_cpu);
	size_t pages = channel->bytes_per_cpu / PAGE_SIZE;
	/* Every possible CPU: one that comes online later finds its ring. */
	for (unsigned i = 0; i < MAX_CPUS && (i < cpu_count || i == 0); i++) {
		void *data = mm_alloc_pages(pages, PAGE_SIZE);
		if (data) /* read out and mapped whole: no earlier owner's bytes */
			memset(data, 0, channel->bytes_per_cpu);
		if (!data || tel_ring_init(&channel->rings[i], data, channel->bytes_per_cpu, mode))
			goto out_free;
	}
	channel->id = register_channel(channel);
	if (channel->id < 0)
		goto out_free;
	return channel;
out_free:
	free_rings(channel);
	kfree(channel);
	return NULL;
}

void tel_channel_destroy(struct tel_channel *channel)
{
	if (!channel)
		return;
	uint64_t irq = spin_lock_irqsave(&registry_lock);
	registry[channel->id] = NULL;
	spin_unlock_irqrestore(&registry_lock, irq);
	free_rings(channel);
	kfree(channel);
}

int tel_channel_id(const struct tel_channel *channel)
{
	return channel->id;
}

struct tel_channel *tel_channel_by_id(int id)
{
	if (id < 0 || id >= TEL_CHANNEL_MAX)
		return NULL;
	return __atomic_load_n(&registry[id], __ATOMIC_ACQUIRE);
}

struct tel_ring *tel_channel_this_ring(struct tel_channel *channel)
{
	struct tel_ring *ring = &channel->rings[this_cpu_id()];
	return ring->data ? ring : NULL;
}

int tel_channel_emit(struct tel_channel *channel, uint16_t type, const void *payload,
		     uint32_t length)
{
	if (length > TEL_RECORD_MAX)
		return -EINVAL;
	uint64_t flags = irq_save();
	struct tel_ring *ring = tel_channel_this_ring(channel);
	void *p = ring ? tel_ring_reserve(ring, type, rdtsc(), length) : NULL;
	if (p) {
		memcpy(p, payload, length);
		tel_ring_commit_length(ring, length);
	}
	irq_restore(flags);
	return p ? 0 : -ENOBUFS;
}

static struct tel_ring *ring_of(struct tel_channel *channel, unsigned cpu)
{
	if (!channel || cpu >= MAX_CPUS || !channel->rings[cpu].data)
		return NULL;
	return &channel->rings[cpu];
}

struct tel_ring *tel_channel_ring(struct tel_channel *channel, unsigned cpu)
{
	return ring_of(channel, cpu);
}

int64_t tel_channel_read_summed(struct tel_channel *channel, unsigned cpu, void *buffer,
				uint64_t length, struct tel_read_summary *summary)
{
	struct tel_ring *ring = ring_of(channel, cpu);
	if (!ring)
		return -EINVAL;
	uint64_t irq = spin_lock_irqsave(&channel->reader_lock);
	uint64_t bytes = tel_ring_read_summed(ring, buffer, length, summary);
	spin_unlock_irqrestore(&channel->reader_lock, irq);
	return (int64_t)bytes;
}

int64_t tel_channel_take_all(struct tel_channel *channel, unsigned cpu, void *buffer,
			     uint64_t length, struct tel_read_summary *summary)
{
	struct tel_ring *ring = ring_of(channel, cpu);
	if (!ring)
		return -EINVAL;
	uint64_t irq = spin_lock_irqsave(&channel->reader_lock);
	uint64_t bytes = tel_ring_take_all(ring, buffer, length, summary);
	spin_unlock_irqrestore(&channel->reader_lock, irq);
	return (int64_t)bytes;
}

int64_t tel_channel_lend_all(struct tel_channel *channel, unsigned cpu, uint64_t length,
			     struct tel_read_summary *summary, struct tel_ring_lent *lent)
{
	struct tel_ring *ring = ring_of(channel, cpu);
	if (!ring)
		return -EINVAL;
	uint64_t irq = spin_lock_irqsave(&channel->reader_lock);
	int64_t bytes = tel_ring_lend_all(ring, length, summary, lent);
	spin_unlock_irqrestore(&channel->reader_lock, irq);
	return bytes;
}

void tel_channel_release(struct tel_channel *channel, unsigned cpu,
			 const struct tel_ring_lent *lent)
{
	struct tel_ring *ring = ring_of(channel, cpu);
	if (!ring)
		return;
	uint64_t irq = spin_lock_irqsave(&channel->reader_lock);
	tel_ring_release(ring, lent);
	spin_unlock_irqrestore(&channel->reader_lock, irq);
}

int64_t tel_channel_read(struct tel_channel *channel, unsigned cpu, void *buffer, uint64_t length)
{
	struct tel_read_summary summary = {0};
	return tel_channel_read_summed(channel, cpu, buffer, length, &summary);
}

int64_t tel_channel_snapshot(struct tel_channel *channel, unsigned cpu, void *buffer,
			     uint64_t length)
{
	struct tel_ring *ring = ring_of(channel, cpu);
	if (!ring)
		return -EINVAL;
	uint64_t irq = spin_lock_irqsave(&channel->reader_lock);
	uint64_t bytes = tel_ring_snapshot(ring, buffer, length);
	spin_unlock_irqrestore(&channel->reader_lock, irq);
	return (int64_t)bytes;
}

int tel_channel_get_stats(struct tel_channel *channel, unsigned cpu, struct tel_ring_stats *stats)
{
	struct tel_ring *ring = ring_of(channel, cpu);
	if (!ring)
		return -EINVAL;
	tel_ring_get_stats(ring, stats);
	return 0;
}

void tel_channel_get_totals(struct tel_channel *channel, struct tel_ring_stats *stats)
{
	*stats = (struct tel_ring_stats){0};
	for (unsigned i = 0; i < MAX_CPUS; i++) {
		struct tel_ring_stats one;
		if (tel_channel_get_stats(channel, i, &one))
			continue;
		stats->produced += one.produced;
		stats->dropped += one.dropped;
		stats->consumed += one.consumed;
		stats->bytes_used += one.bytes_used;
		stats->size += one.size;
	}
}

/* Header and position pages for ring cpu.  Returns 0 or -ENOMEM. */
static int share_ring(struct tel_channel *channel, unsigned cpu)
{
	if (channel->rings[cpu].shared)
		return 0;
	if (!channel->headers[cpu])
		channel->headers[cpu] = mm_alloc_pages(1, PAGE_SIZE);
	if (!channel->positions[cpu])
		channel->positions[cpu] = mm_alloc_pages(1, PAGE_SIZE);
	if (!channel->headers[cpu] || !channel->positions[cpu])
		return -ENOMEM;
	memset(channel->headers[cpu], 0, PAGE_SIZE);
	memset(channel->positions[cpu], 0, PAGE_SIZE);
	return tel_ring_share(&channel->rings[cpu], channel->headers[cpu], channel->positions[cpu]);
}

int tel_channel_share(struct tel_channel *channel, int pid)
{
	if (tel_channel_kernel_only(channel))
		return -EBUSY;
	for (unsigned i = 0; i < MAX_CPUS; i++) {
		if (!channel->rings[i].data)
			continue;
		int error = share_ring(channel, i);
		if (error)
			return error;
	}
	__atomic_store_n(&channel->consumer_pid, pid, __ATOMIC_RELEASE);
	return 0;
}

int tel_channel_consumer(const struct tel_channel *channel)
{
	return __atomic_load_n(&channel->consumer_pid, __ATOMIC_ACQUIRE);
}

void tel_channel_keep_for_kernel(struct tel_channel *channel)
{
	ASSERT(!tel_channel_consumer(channel));
	__atomic_store_n(&channel->kernel_only, true, __ATOMIC_RELEASE);
}

bool tel_channel_kernel_only(const struct tel_channel *channel)
{
	return __atomic_load_n(&channel->kernel_only, __ATOMIC_ACQUIRE);
}

/* Maps the page at kernel address page to virt (already mapped: kept). */
static int map_page(uint64_t virt, const void *page, bool writable)
{
	int error = proc_map_kernel_frame(virt, virt_to_phys(page), writable);
	return error == -EEXIST ? 0 : error;
}

/* A ring is a kernel region of the consumer: it can be neither unmapped
 * nor mapped over while the producer writes it, and its pages stay the
 * channel's when the consumer exits. */
static int map_ring(struct tel_channel *channel, unsigned cpu, const struct tel_map *map)
{
	uint64_t at = map->base + cpu * map->stride;
	int error = proc_add_kernel_region(at, at + map->stride);
	if (!error)
		error = map_page(at, channel->headers[cpu], false);
	if (!error)
		error = map_page(at + map->position_offset, channel->positions[cpu], true);
	for (uint64_t off = 0; !error && off < map->size; off += PAGE_SIZE)
		error =
		    map_page(at + map->data_offset + off, channel->rings[cpu].data + off, false);
	return error;
}

int tel_channel_map(struct tel_channel *channel, struct tel_map *map)
{
	if (!channel || !tel_channel_consumer(channel))
		return -EINVAL;
	unsigned cpus = 0;
	for (unsigned i = 0; i < MAX_CPUS; i++)
		if (channel->rings[i].shared)
			cpus = i + 1;
	*map = (struct tel_map){.base = TEL_MAP_BASE + (uint64_t)channel->id * TEL_MAP_SPAN,
				.stride = channel->bytes_per_cpu + 2 * PAGE_SIZE,
				.position_offset = PAGE_SIZE,
				.data_offset = 2 * PAGE_SIZE,
				.size = channel->bytes_per_cpu,
				.cpus = cpus};
	for (unsigned i = 0; i < cpus; i++) {
		if (!channel->rings[i].shared)
			continue;
		int error = map_ring(channel, i, map);
		if (error)
			return error;
	}
	return 0;
}
