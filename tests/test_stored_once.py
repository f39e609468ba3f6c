"""What a notebook stores of a picture, it stores once where it can: the memory curve's
points."""
from jaxmagic.core.compiled import memory as M
from jaxmagic.render.memory import curve_svg


def test_the_memory_curve_writes_its_points_once():
    curve = [(i * 37) % 101 for i in range(300)]
    p = M.MemoryProfile(curve, [str(i) for i in range(300)], curve.index(max(curve)), [],
                        100, 1, 1, 1, 150, "cpu", 1)
    svg = curve_svg(p)
    point = svg.split('points="')[1].split()[5]        # a point along the curve
    assert svg.count(point) == 1, point
