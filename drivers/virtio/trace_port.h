/*
 * The trace stream's "console" sink on the virtio console (trace_port.c):
 * registered at boot when there is a console device, with the host's
 * control lines coming back in on the same port.
 */
#ifndef DRIVERS_VIRTIO_TRACE_PORT_H
#define DRIVERS_VIRTIO_TRACE_PORT_H

/* After the PCI probe: registers the sink and the receiver if a console
 * device was found; nothing otherwise. */
void trace_port_init(void);

#endif
