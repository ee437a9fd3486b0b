//! The pure agent core: strategies, threads and context projection. No IO happens here.
