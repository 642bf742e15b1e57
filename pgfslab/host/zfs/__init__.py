"""ZFS targets: the pools and datasets (`pools`), the commands of the implementation that runs, OpenZFS or
Debian's userspace zfs-fuse (`commands`), zfs-fuse's daemon started and stopped by the lab (`daemon`), the
dataset properties a target may set (`properties`), and a target's pool created, imported and imported again
after a power cut (`target`)."""
