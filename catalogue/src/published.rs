//! The published figures of the original experiment (EXPERIMENT.md), to
//! print and draw next to this machine's.

use crate::route::Route;
use crate::server::Server;

/// What the original reported for one condition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Published {
    pub p95: f64,
    pub p95_min: Option<f64>,
    pub p95_max: Option<f64>,
    pub app_send_s: Option<f64>,
    pub client_receive_s: Option<f64>,
}

const fn p(p95: f64) -> Published {
    Published {
        p95,
        p95_min: None,
        p95_max: None,
        app_send_s: None,
        client_receive_s: None,
    }
}

/// The original's figure for exactly this condition, if it measured it.
pub fn exact(server: Server, route: Route, slow: u32) -> Option<Published> {
    use Route::*;
    match (server, route, slow) {
        (Server::GunicornSync2, Direct, 0) => Some(p(1.57)),
        (Server::GunicornSync2, Direct, 1) => Some(p(1.72)),
        (Server::GunicornSync2, Direct, 2) => Some(Published {
            p95: 5945.11,
            p95_min: Some(5928.68),
            p95_max: Some(6590.04),
            app_send_s: Some(6.562),
            client_receive_s: Some(8.016),
        }),
        (Server::GunicornSync2, NginxOff, 0) => Some(p(2.66)),
        (Server::GunicornSync2, NginxOff, 1) => Some(p(2.33)),
        (Server::GunicornSync2, NginxOff, 2) => Some(Published {
            p95: 1071.47,
            p95_min: Some(1052.72),
            p95_max: Some(1826.44),
            app_send_s: Some(1.970),
            client_receive_s: Some(8.009),
        }),
        (Server::GunicornSync2, NginxOn, 0) => Some(p(1.93)),
        (Server::GunicornSync2, NginxOn, 1) => Some(p(2.94)),
        (Server::GunicornSync2, NginxOn, 2) => Some(Published {
            p95: 2.34,
            p95_min: Some(1.96),
            p95_max: Some(3.03),
            app_send_s: Some(0.055),
            client_receive_s: Some(8.005),
        }),
        (Server::GunicornGthread4, Direct, 2) => Some(p(1.55)),
        _ => None,
    }
}

/// The Gunicorn counterpart of a Rust replica ([`Server::replicates`]),
/// else the server itself.
pub fn counterpart_server(s: Server) -> Server {
    s.replicates().unwrap_or(s)
}

/// The NGINX counterpart of a pingora route ([`Route::replicates`]), else
/// the route itself.
pub fn counterpart_route(r: Route) -> Route {
    r.replicates().unwrap_or(r)
}

/// The published figure to compare a condition with: its own, or that of
/// its Gunicorn/NGINX counterpart. Returns the figure and where it is from.
pub fn reference(server: Server, route: Route, slow: u32) -> Option<(Published, String)> {
    let s = counterpart_server(server);
    let r = counterpart_route(route);
    exact(s, r, slow).map(|p| (p, format!("{s}/{r}")))
}

/// The largest schedule lag of the original's load generator.
pub const MAX_SCHEDULE_LAG_MS: f64 = 7.0;
/// The original's peak of open temp files with buffering on and 2 slow.
pub const TEMP_PEAK_MIB: f64 = 25.2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counterparts() {
        let (p, from) = reference(Server::RustSync2, Route::PingoraOn, 2).unwrap();
        assert_eq!(p.p95, 2.34);
        assert_eq!(from, "gunicorn-sync2/nginx-on");
        assert!(reference(Server::RustAsync, Route::Direct, 2).is_none());
        assert_eq!(
            reference(Server::RustThreads4, Route::Direct, 2)
                .unwrap()
                .0
                .p95,
            1.55
        );
    }
}
