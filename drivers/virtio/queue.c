/*
 * Split virtqueues with fixed buffers: descriptor i always points at buffer
 * i, so offering a buffer is "fill descriptor i, put i in the available
 * ring", and a used entry names the buffer to read.  The driver remembers
 * which descriptors the device owns (in_flight), and a used entry naming a
 * descriptor out of range or not owned by the device is counted and skipped:
 * the device is never trusted to say which memory is whose.  A used index
 * that runs ahead of the buffers in flight and those the driver forgot
 * (which would make stale ring entries look like completions) marks the
 * queue broken: nothing more is
 * taken from it, and the driver fails or resets the device.  Lengths the
 * device reports are checked by the caller against buffer_size.
 *
 * Ordering: x86 keeps stores in order and loads in order, so publishing a
 * descriptor before the avail index (and reading the used index before the
 * entry) needs only a compiler barrier; the store-then-load pairs (avail
 * index, then the device's NO_NOTIFY flag; the NO_INTERRUPT flag, then the
 * used index) need a full fence.  Callers serialise access to one queue.
 */
#include "virtio/virtio.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

#define VIRTQ_RING_PAGES 3 /* descriptors, available ring, used ring: a page each */

static void *virtio_dma_pages(size_t bytes, uint64_t *phys)
{
	size_t pages = (bytes + PAGE_SIZE - 1) / PAGE_SIZE;
	void *memory = mm_alloc_pages(pages, PAGE_SIZE);
	if (memory) {
		memset(memory, 0, pages * PAGE_SIZE);
		*phys = virt_to_phys(memory);
	}
	return memory;
}

int virtio_alloc_queue(struct virtqueue *queue, unsigned size, unsigned buffer_size)
{
	if (size == 0 || size > VIRTIO_QUEUE_MAX || (size & (size - 1)) || buffer_size == 0)
		return -EINVAL;
	uint64_t rings_phys;
	uint8_t *rings = virtio_dma_pages(VIRTQ_RING_PAGES * PAGE_SIZE, &rings_phys);
	queue->in_flight = kzalloc(size);
	queue->buffers = virtio_dma_pages((size_t)size * buffer_size, &queue->buffers_phys);
	if (!rings || !queue->in_flight || !queue->buffers)
		return -ENOMEM; /* boot-time only: what was allocated stays */
	queue->size = size;
	queue->buffer_size = buffer_size;
	queue->desc = (struct virtq_desc *)rings;
	queue->avail = (struct virtq_avail *)(rings + PAGE_SIZE);
	queue->used = (struct virtq_used *)(rings + 2 * PAGE_SIZE);
	queue->last_used = queue->next_avail = 0;
	queue->free_count = size;
	queue->free_cursor = 0;
	return 0;
}

void virtio_free_queue(struct virtqueue *queue)
{
	size_t buffer_pages =
	    ((size_t)queue->size * queue->buffer_size + PAGE_SIZE - 1) / PAGE_SIZE;
	mm_free_pages(queue->desc, VIRTQ_RING_PAGES);
	mm_free_pages(queue->buffers, buffer_pages);
	kfree(queue->in_flight);
	memset(queue, 0, sizeof(*queue));
}

void *virtio_queue_buffer(struct virtqueue *queue, unsigned id)
{
	return queue->buffers + (size_t)id * queue->buffer_size;
}

/* Fills descriptor id and puts it in the available ring. */
static void offer_descriptor(struct virtqueue *queue, unsigned id, uint64_t phys, uint32_t length,
			     uint16_t flags)
{
	struct virtq_desc *desc = &queue->desc[id];
	desc->address = phys;
	desc->length = length;
	desc->flags = flags;
	desc->next = 0;
	queue->in_flight[id] = 1;
	queue->free_count--;
	queue->avail->ring[queue->next_avail % queue->size] = (uint16_t)id;
	queue->next_avail++;
	__atomic_store_n(&queue->avail->index, queue->next_avail, __ATOMIC_RELEASE);
}

int virtio_offer_buffer(struct virtqueue *queue, unsigned id, uint32_t length, bool device_writes)
{
	if (id >= queue->size || queue->in_flight[id])
		return -EINVAL;
	offer_descriptor(queue, id, queue->buffers_phys + (uint64_t)id * queue->buffer_size,
			 length < queue->buffer_size ? length : queue->buffer_size,
			 device_writes ? VIRTQ_DESC_F_WRITE : 0);
	return 0;
}

int virtio_offer_external(struct virtqueue *queue, unsigned id, uint64_t phys, uint32_t length)
{
	if (id >= queue->size || queue->in_flight[id])
		return -EINVAL;
	offer_descriptor(queue, id, phys, length, 0);
	return 0;
}

int virtio_offer_chain(struct virtqueue *queue, unsigned head,
		       const struct virtio_segment *segments, unsigned count)
{
	if (count == 0 || head >= queue->size || count > queue->size - head ||
	    queue->in_flight[head])
		return -EINVAL;
	for (unsigned i = 0; i < count; i++) {
		struct virtq_desc *desc = &queue->desc[head + i];
		desc->address = segments[i].phys;
		desc->length = segments[i].length;
		desc->flags = (uint16_t)((segments[i].device_writes ? VIRTQ_DESC_F_WRITE : 0) |
					 (i + 1 < count ? VIRTQ_DESC_F_NEXT : 0));
		desc->next = (uint16_t)(i + 1 < count ? head + i + 1 : 0);
	}
	queue->in_flight[head] = 1;
	queue->free_count--;
	queue->avail->ring[queue->next_avail % queue->size] = (uint16_t)head;
	queue->next_avail++;
	__atomic_store_n(&queue->avail->index, queue->next_avail, __ATOMIC_RELEASE);
	return 0;
}

void virtio_forget_buffer(struct virtqueue *queue, unsigned id)
{
	if (id >= queue->size || !queue->in_flight[id])
		return;
	queue->in_flight[id] = 0;
	queue->free_count++;
	queue->forgotten++;
}

bool virtio_buffer_in_flight(const struct virtqueue *queue, unsigned id)
{
	return id < queue->size && queue->in_flight[id];
}

int virtio_find_free_buffer(struct virtqueue *queue)
{
	if (queue->free_count == 0)
		return -EAGAIN;
	for (unsigned i = 0; i < queue->size; i++) {
		unsigned id = (queue->free_cursor + i) % queue->size;
		if (!queue->in_flight[id]) {
			queue->free_cursor = (id + 1) % queue->size;
			return (int)id;
		}
	}
	return -EAGAIN;
}

unsigned virtio_used_pending(struct virtqueue *queue)
{
	return (uint16_t)(__atomic_load_n(&queue->used->index, __ATOMIC_ACQUIRE) -
			  queue->last_used);
}

bool virtio_has_used(struct virtqueue *queue)
{
	return !queue->broken &&
	       __atomic_load_n(&queue->used->index, __ATOMIC_ACQUIRE) != queue->last_used;
}

/* Whether the device, its used index at used_index, claims more used
 * entries than it holds buffers: an honest device returns each buffer in
 * flight once, and each buffer the driver forgot at most once more (never
 * beyond the ring's size). */
static bool used_index_ran_ahead(struct virtqueue *queue, uint16_t used_index)
{
	unsigned could_return = queue->size - queue->free_count + queue->forgotten;
	if (could_return > queue->size)
		could_return = queue->size;
	return (uint16_t)(used_index - queue->last_used) > could_return;
}

/* The used index is read once a call: the entries taken are those the check
 * passed, not more the device claimed between the check and the walk. */
bool virtio_take_used(struct virtqueue *queue, unsigned *id, uint32_t *length)
{
	if (queue->broken)
		return false;
	uint16_t used_index = __atomic_load_n(&queue->used->index, __ATOMIC_ACQUIRE);
	if (used_index_ran_ahead(queue, used_index)) {
		queue->broken = true;
		return false;
	}
	while (queue->last_used != used_index) {
		volatile struct virtq_used_elem *elem =
		    &queue->used->ring[queue->last_used % queue->size];
		uint32_t used_id = elem->id, used_length = elem->length;
		queue->last_used++;
		if (used_id >= queue->size || !queue->in_flight[used_id]) {
			queue->bad_used++;
			if (queue->forgotten)
				queue->forgotten--; /* perhaps a forgotten one, back after all */
			continue;
		}
		queue->in_flight[used_id] = 0;
		queue->free_count++;
		*id = used_id;
		*length = used_length;
		return true;
	}
	return false;
}

void virtio_kick_queue(struct virtqueue *queue)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&queue->used->flags, __ATOMIC_RELAXED) & VIRTQ_USED_F_NO_NOTIFY)
		return;
	*queue->notify = (uint16_t)queue->index;
	queue->kicks++;
}

void virtio_suppress_interrupts(struct virtqueue *queue)
{
	__atomic_store_n(&queue->avail->flags, VIRTQ_AVAIL_F_NO_INTERRUPT, __ATOMIC_RELAXED);
}

void virtio_allow_interrupts(struct virtqueue *queue)
{
	__atomic_store_n(&queue->avail->flags, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
