//! The connection's own frames: the server's SETTINGS (its windows, its frame size, its stream
//! limit), GOAWAY (the requests it never processed), WINDOW_UPDATE (bodies waiting for room).

use super::*;

impl H2 {
    pub(super) fn settings(&mut self, h: Head, p: &[u8], out: &mut Vec<u8>) -> Result<(), OpError> {
        if h.stream != 0 {
            return Err(connection_error(
                out,
                frame::PROTOCOL_ERROR,
                "SETTINGS on a stream",
            ));
        }
        if h.flags & frame::ACK != 0 {
            return Ok(());
        }
        if !p.len().is_multiple_of(6) {
            return Err(connection_error(
                out,
                frame::FRAME_SIZE_ERROR,
                "a SETTINGS frame not of 6-byte entries",
            ));
        }
        for e in p.chunks_exact(6) {
            let id = u16::from_be_bytes([e[0], e[1]]);
            let v = u32::from_be_bytes([e[2], e[3], e[4], e[5]]);
            match id {
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.peer_max_streams = v as usize,
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if i64::from(v) > frame::MAX_WINDOW {
                        return Err(connection_error(
                            out,
                            frame::FLOW_CONTROL_ERROR,
                            "an initial window past 2^31-1",
                        ));
                    }
                    let delta = i64::from(v) - self.peer_window;
                    self.peer_window = i64::from(v);
                    for s in self.streams.values_mut() {
                        s.send_window += delta;
                    }
                    if delta > 0 {
                        self.resume_bodies(out);
                    }
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    if !(16_384..=16_777_215).contains(&v) {
                        return Err(connection_error(
                            out,
                            frame::PROTOCOL_ERROR,
                            "a max frame size out of range",
                        ));
                    }
                    self.peer_max_frame = v as usize;
                }
                _ => {}
            }
        }
        frame::settings_ack(out);
        Ok(())
    }

    pub(super) fn goaway(
        &mut self,
        p: &[u8],
        out: &mut Vec<u8>,
        done: &mut dyn FnMut(usize, Ended),
    ) -> Result<(), OpError> {
        if p.len() < 8 {
            return Err(connection_error(
                out,
                frame::FRAME_SIZE_ERROR,
                "a GOAWAY frame too short",
            ));
        }
        let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
        let code = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
        self.goaway = true;
        // The streams above `last` were not processed (RFC 9113 §6.8): after a graceful
        // GOAWAY they are sent again elsewhere; after an error they fail with its name.
        let dropped: Vec<u32> = (self.streams.keys().copied())
            .filter(|&id| id > last)
            .collect();
        for id in dropped {
            let how = if code == 0 {
                Ended::Unprocessed
            } else {
                Ended::Failed(OpError::new(
                    ErrorClass::Reset,
                    format!("HTTP/2: the server went away ({})", frame::error_name(code)),
                ))
            };
            self.end(id, how, out, done);
        }
        Ok(())
    }

    pub(super) fn window_update(
        &mut self,
        h: Head,
        p: &[u8],
        out: &mut Vec<u8>,
        done: &mut dyn FnMut(usize, Ended),
    ) -> Result<(), OpError> {
        let inc = word(p, out, "a WINDOW_UPDATE frame not of 4 bytes")? & 0x7fff_ffff;
        if h.stream == 0 {
            if inc == 0 || self.send_window + i64::from(inc) > frame::MAX_WINDOW {
                return Err(connection_error(
                    out,
                    frame::FLOW_CONTROL_ERROR,
                    "a connection window update of 0 or past 2^31-1",
                ));
            }
            self.send_window += i64::from(inc);
            self.resume_bodies(out);
            return Ok(());
        }
        let Some(s) = self.streams.get_mut(&h.stream) else {
            return Ok(());
        };
        if inc == 0 || s.send_window + i64::from(inc) > frame::MAX_WINDOW {
            self.fail_stream(
                h.stream,
                frame::FLOW_CONTROL_ERROR,
                "HTTP/2: a stream window update of 0 or past 2^31-1",
                out,
                done,
            );
            return Ok(());
        }
        s.send_window += i64::from(inc);
        self.send_body(h.stream, out);
        Ok(())
    }
}
