"""IMB-P2P: PingPong, PingPing, Unirandom, Birandom, Corandom, Stencil2D, Stencil3D and
SendRecv_Replace on all ranks at once, with IMB-P2P's own options, schedule and text."""
