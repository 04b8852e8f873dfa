/*
 * The virtio console (virtio-serial): a byte stream out of the OS to the host
 * and one back in, apart from the network under test and from the serial
 * console.  QEMU: -device virtio-serial-pci,max_ports=2 -chardev SPEC,id=vcon0
 * -device virtserialport,chardev=vcon0,nr=1,name=org.microscope.trace
 * (tools/qemu.py --console-port SPEC): port 1, which QEMU throttles instead
 * of dropping what the host does not take.  A device without MULTIPORT is
 * driven on port 0 (a virtconsole: lossy on sockets and pipes).  The device
 * is optional: without one, vcon_present() is false and every call below is
 * harmless.
 *
 *     static void on_bytes(const uint8_t *data, size_t length, void *arg) { ... }
 *     vcon_set_receiver(on_bytes, NULL);       // host -> OS, in the driver's thread
 *     if (vcon_write(packet, size) < 0) ...    // OS -> host, in order, may sleep
 *     vcon_write_lent(pages, size);            // the same, read in place (no copy)
 *     vcon_flush();                            // before stopping the machine, or reusing pages
 */
#ifndef DRIVERS_VIRTIO_CONSOLE_H
#define DRIVERS_VIRTIO_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes from the host, handed over in order, in the driver's receive thread
 * (never in an interrupt): the receiver may sleep and may call vcon_write
 * (to answer), but the next bytes wait until it returns. */
typedef void (*vcon_receive_fn)(const uint8_t *data, size_t length, void *arg);

struct vcon_stats {
	uint64_t bytes_out;          /* handed to the device by vcon_write */
	uint64_t bytes_in;           /* handed to a receiver */
	uint64_t writes;             /* vcon_write calls that sent something */
	uint64_t rx_buffers_dropped; /* received buffers not delivered: no receiver, or a
					device that reported a length beyond the buffer */
	uint64_t tx_waits;           /* times a writer slept until the device returned a buffer */
	uint64_t host_waits;         /* times a writer slept until the host connected */
};

/* True when a console device was found and started. */
bool vcon_present(void);
/* Sends length bytes to the host, after the bytes of every earlier call and
 * before those of any later one: callers on several threads are serialised,
 * and one call's bytes are never interleaved with another's.  Copies into
 * the driver's buffers and returns once all are handed to the device (not
 * when the host has them); sleeps while every buffer is with the device (the
 * host reads slowly) and while the host's end is not connected (the device
 * said so with MULTIPORT: QEMU would discard the bytes).
 * Thread context.  Returns 0, -ENODEV (no device) or -EIO (the device failed;
 * some of the bytes may have been sent). */
int vcon_write(const void *data, size_t length);
/* vcon_write without the copy: the device reads data where it is, so data
 * must be physically contiguous (mm_alloc_pages) and stay as it is until a
 * vcon_flush made after this call returns.  For a stream of large frames
 * whose writer can keep each buffer until its next pass.  Returns what
 * vcon_write does. */
int vcon_write_lent(const void *data, size_t length);
/* Waits until the device has taken every byte written before the call (the
 * device works through its queue on its own time, so bytes written just
 * before the machine stops may otherwise never leave it).  Thread context.
 * Returns 0, -ENODEV (no device) or -EIO (the device failed). */
int vcon_flush(void);
/* vcon_flush without the wait: true when the device has taken every byte
 * written so far (or there is no device, or it failed). */
bool vcon_flushed(void);
/* Makes receive(data, length, arg) get the host's bytes from now on; NULL
 * stops delivery (bytes arriving meanwhile are dropped and counted).  When it
 * returns, the previous receiver is not running and will not be called again
 * (unless the receiver itself made the call).  Until a receiver is first set,
 * the host's bytes wait in the host.  Without a device it does nothing. */
void vcon_set_receiver(vcon_receive_fn receive, void *arg);
/* Moves on each time the host closes the port: a receiver that sees it move
 * knows the bytes now come from another connection. */
uint32_t vcon_host_epoch(void);
/* Copies the driver's counters (all 0 without a device). */
void vcon_get_stats(struct vcon_stats *stats);

#endif
