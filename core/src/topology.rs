//! The KFD sysfs topology snapshot.
