/*
 * Channels: one ring per CPU.  The producer on a CPU is whoever runs there
 * with interrupts off (emit and reserve..commit hold them off), so each ring
 * has exactly one producer at a time and no lock is needed to write.  The
 * consumer side (read, snapshot, stats) takes the channel's reader lock, so
 * two readers never move the same tail.  A flight-recorder snapshot of
 * another CPU's ring may race with its producer; it copies whole records as
 * they were when it read them (a record being overwritten at that moment may
 * come out torn, which the snapshot's consumer must tolerate).
 *
 * The registry (TEL_CHANNEL_MAX ids) lets system calls name a channel.
 */
#include "telemetry/internal.h"

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "time/time.h"

struct tel_channel {
	int id;
	char name[24];
	struct spinlock reader_lock;
	uint64_t bytes_per_cpu;
	struct tel_ring rings[MAX_CPUS];
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

/* The calling CPU's ring; NULL when it has none (came online after create). */
static struct tel_ring *this_ring(struct tel_channel *channel)
{
	struct tel_ring *ring = &channel->rings[this_cpu_id()];
	return ring->data ? ring : NULL;
}

void *tel_channel_reserve(struct tel_channel *channel, uint16_t type, uint32_t length,
			  uint64_t *flags)
{
	*flags = irq_save();
	struct tel_ring *ring = this_ring(channel);
	void *payload = NULL;
	if (ring)
		payload = tel_ring_reserve(ring, type, (uint16_t)this_cpu_id(), clock_ns(), length);
	if (!payload)
		irq_restore(*flags);
	return payload;
}

void tel_channel_commit(struct tel_channel *channel, uint64_t flags)
{
	tel_ring_commit(this_ring(channel));
	irq_restore(flags);
}

int tel_channel_emit(struct tel_channel *channel, uint16_t type, const void *payload,
		     uint32_t length)
{
	if (length > TEL_RECORD_MAX)
		return -EINVAL;
	uint64_t flags;
	void *p = tel_channel_reserve(channel, type, length, &flags);
	if (!p)
		return -ENOBUFS;
	memcpy(p, payload, length);
	tel_channel_commit(channel, flags);
	return 0;
}

static struct tel_ring *ring_of(struct tel_channel *channel, unsigned cpu)
{
	if (!channel || cpu >= MAX_CPUS || !channel->rings[cpu].data)
		return NULL;
	return &channel->rings[cpu];
}

int64_t tel_channel_read(struct tel_channel *channel, unsigned cpu, void *buffer, uint64_t length)
{
	struct tel_ring *ring = ring_of(channel, cpu);
	if (!ring)
		return -EINVAL;
	uint64_t irq = spin_lock_irqsave(&channel->reader_lock);
	uint64_t bytes = tel_ring_read(ring, buffer, length);
	spin_unlock_irqrestore(&channel->reader_lock, irq);
	return (int64_t)bytes;
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
