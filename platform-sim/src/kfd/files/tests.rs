//! The simulated pipes and SMI streams: examples, and a property test against a model of
//! Linux's non-blocking pipes.

use super::*;

#[test]
fn pipe_ends_read_and_write_their_way() {
    let f = Files::default();
    let (r, w) = f.pipe();
    assert_eq!(f.read(r, &mut [0; 4]), Err(Errno::EAGAIN));
    assert_eq!(f.poll(r, 0), Ok(false));
    assert_eq!(f.write(w, b"..."), Ok(3));
    assert_eq!(f.write(r, b"."), Err(Errno::EBADF));
    assert_eq!(f.read(w, &mut [0; 4]), Err(Errno::EBADF));
    assert_eq!(f.poll(r, 0), Ok(true));
    let mut buf = [0; 8];
    assert_eq!(f.read(r, &mut buf), Ok(3));
    assert_eq!(&buf[..3], b"...");
    assert!(f.close(r) && f.close(w));
    assert_eq!(f.read(r, &mut buf), Err(Errno::EBADF));
    assert_eq!(f.count(), 0);
}

#[test]
fn a_full_pipe_takes_what_fits() {
    let f = Files::default();
    let (_, w) = f.pipe();
    let big = vec![b'.'; PIPE_CAPACITY - 1];
    assert_eq!(f.write(w, &big), Ok(PIPE_CAPACITY - 1));
    assert_eq!(f.write(w, b".."), Ok(1));
    assert_eq!(f.write(w, b"."), Err(Errno::EAGAIN));
}

#[test]
fn smi_stream_mask_and_fifo() {
    let f = Files::default();
    let c = Arc::new(SmiClient::new(7, 1));
    let fd = f.smi(c.clone());
    assert_eq!(f.write(fd, &[1, 0, 0]), Err(Errno::EFAULT));
    assert_eq!(f.write(fd, &6u64.to_le_bytes()), Ok(8));
    assert_eq!(c.events.load(Ordering::Acquire), 6);
    assert!(c.fifo.push_all(b"3 1 GPU_HANG\n"));
    assert!(!c.fifo.push_all(&[b'x'; SMI_FIFO_SIZE]));
    let mut buf = [0u8; 64];
    let n = f.read(fd, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"3 1 GPU_HANG\n");
    assert_eq!(f.read(fd, &mut buf), Err(Errno::EAGAIN));
}

mod model {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// One end of one pipe.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum End {
        Read,
        Write,
    }

    #[derive(Debug, Clone)]
    enum Op {
        Pipe,
        /// Write `len` bytes through the descriptor handed out `fd`-th (modulo how many).
        Write {
            fd: usize,
            len: usize,
        },
        Read {
            fd: usize,
            len: usize,
        },
        Poll {
            fd: usize,
        },
        Close {
            fd: usize,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        let len = prop_oneof![0usize..64, 0usize..4096, Just(PIPE_CAPACITY), 60_000usize..70_000];
        prop_oneof![
            1 => Just(Op::Pipe),
            4 => (any::<usize>(), len.clone()).prop_map(|(fd, len)| Op::Write { fd, len }),
            4 => (any::<usize>(), len).prop_map(|(fd, len)| Op::Read { fd, len }),
            1 => any::<usize>().prop_map(|fd| Op::Poll { fd }),
            2 => any::<usize>().prop_map(|fd| Op::Close { fd }),
        ]
    }

    /// Linux's non-blocking pipes: bytes in order, a bound, lowest free descriptors, `EPIPE`
    /// without a reader, end of file without a writer.
    #[derive(Default)]
    struct Model {
        /// Open descriptors: the pipe and the end.
        open: BTreeMap<u32, (usize, End)>,
        /// Per pipe: bytes held, read end open, write end open.
        pipes: Vec<(VecDeque<u8>, bool, bool)>,
        next_byte: u8,
    }

    impl Model {
        fn lowest_free(&self) -> u32 {
            (FILE_FD_BASE..).find(|fd| !self.open.contains_key(fd)).unwrap()
        }

        fn pipe(&mut self) -> (u32, u32) {
            let p = self.pipes.len();
            self.pipes.push((VecDeque::new(), true, true));
            let r = self.lowest_free();
            self.open.insert(r, (p, End::Read));
            let w = self.lowest_free();
            self.open.insert(w, (p, End::Write));
            (r, w)
        }

        fn write(&mut self, fd: u32, data: &[u8]) -> Result<usize, Errno> {
            let &(p, end) = self.open.get(&fd).ok_or(Errno::EBADF)?;
            let (q, reader, _) = &mut self.pipes[p];
            match end {
                End::Read => Err(Errno::EBADF),
                End::Write if !*reader => Err(Errno::EPIPE),
                End::Write => {
                    let n = data.len().min(PIPE_CAPACITY - q.len());
                    if n == 0 && !data.is_empty() {
                        return Err(Errno::EAGAIN);
                    }
                    q.extend(&data[..n]);
                    Ok(n)
                }
            }
        }

        fn read(&mut self, fd: u32, len: usize) -> Result<Vec<u8>, Errno> {
            let &(p, end) = self.open.get(&fd).ok_or(Errno::EBADF)?;
            let (q, _, writer) = &mut self.pipes[p];
            match end {
                End::Write => Err(Errno::EBADF),
                End::Read if q.is_empty() && len > 0 && *writer => Err(Errno::EAGAIN),
                End::Read => {
                    let n = len.min(q.len());
                    Ok(q.drain(..n).collect())
                }
            }
        }

        fn poll(&self, fd: u32) -> Result<bool, Errno> {
            let &(p, end) = self.open.get(&fd).ok_or(Errno::EBADF)?;
            let (q, _, writer) = &self.pipes[p];
            Ok(end == End::Read && (!q.is_empty() || !*writer))
        }

        fn close(&mut self, fd: u32) -> bool {
            let Some((p, end)) = self.open.remove(&fd) else { return false };
            match end {
                End::Read => self.pipes[p].1 = false,
                End::Write => self.pipes[p].2 = false,
            }
            true
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any sequence of pipe operations answers as the model does, byte for byte.
        #[test]
        fn pipes_behave_like_linux_pipes(ops in proptest::collection::vec(op(), 1..60)) {
            let files = Files::default();
            let mut model = Model::default();
            // Every descriptor ever handed out (closed ones stay: using them is EBADF, or
            // names whatever reused the number, for both alike).
            let mut fds: Vec<u32> = vec![FILE_FD_BASE];
            let pick = |fds: &[u32], i: usize| fds[i % fds.len()];
            for op in ops {
                match op {
                    Op::Pipe => {
                        let got = files.pipe();
                        prop_assert_eq!(got, model.pipe());
                        fds.extend([got.0, got.1]);
                    }
                    Op::Write { fd, len } => {
                        let fd = pick(&fds, fd);
                        let data: Vec<u8> = (0..len)
                            .map(|i| model.next_byte.wrapping_add(i as u8))
                            .collect();
                        let want = model.write(fd, &data);
                        prop_assert_eq!(files.write(fd, &data), want);
                        if let Ok(n) = want {
                            model.next_byte = model.next_byte.wrapping_add(n as u8);
                        }
                    }
                    Op::Read { fd, len } => {
                        let fd = pick(&fds, fd);
                        let mut buf = vec![0u8; len];
                        let got = files.read(fd, &mut buf).map(|n| buf[..n].to_vec());
                        prop_assert_eq!(got, model.read(fd, len));
                    }
                    Op::Poll { fd } => {
                        let fd = pick(&fds, fd);
                        prop_assert_eq!(files.poll(fd, 0), model.poll(fd));
                    }
                    Op::Close { fd } => {
                        let fd = pick(&fds, fd);
                        prop_assert_eq!(files.close(fd), model.close(fd));
                    }
                }
                prop_assert_eq!(files.count(), model.open.len());
            }
        }
    }
}
