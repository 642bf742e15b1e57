"""What the lab does to the machine, and only to what it created or was configured with.

`targets` (image -> loop device -> mkfs -> mount, and back), `powercut`, `blockdev`, `mounts`, `safety`, `btrfs`,
`snapshots`, `cgroups` (+ `cgexec`), `sysctl`, `postgres` (one cluster per target), `proc` (external commands),
`zfs` (the lab's pools; with `zfs_commands`, `zfs_properties` and `zfs_daemon`, the zfs-fuse daemon).
"""
