// A line-driven front end to ROS 2 tf2's own BufferCore, for the differential test of
// lookup_velocity (tests/ros2/test_tf2_velocity.py). Compiled there against tf2's sources.
//
// stdin, one command a line (numbers as C99 hex floats or integers, names without spaces):
//   set PARENT CHILD STAMP_NS TX TY TZ QX QY QZ QW STATIC
//   vel TRACKING OBSERVATION REFERENCE POINT_FRAME PX PY PZ TIME_NS INTERVAL_NS
// stdout, one line per vel:
//   ok SEC NANOSEC LX LY LZ AX AY AZ  (hex floats)   |   err EXCEPTION_TYPE
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "geometry_msgs/msg/transform_stamped.hpp"
#include "tf2/buffer_core.h"
#include "tf2/exceptions.h"

namespace {

double number(const std::string& s) { return std::strtod(s.c_str(), nullptr); }

std::string hex(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", x);
    return buf;
}

}  // namespace

int main() {
    tf2::BufferCore core(tf2::Duration(std::chrono::seconds(1000000)));
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream in(line);
        std::string command;
        in >> command;
        if (command == "set") {
            std::string parent, child, stamp, v[7], is_static;
            in >> parent >> child >> stamp;
            for (auto& x : v) in >> x;
            in >> is_static;
            geometry_msgs::msg::TransformStamped t;
            const long long ns = std::stoll(stamp);
            t.header.stamp.sec = static_cast<int32_t>(ns / 1000000000);
            t.header.stamp.nanosec = static_cast<uint32_t>(ns % 1000000000);
            t.header.frame_id = parent;
            t.child_frame_id = child;
            t.transform.translation.x = number(v[0]);
            t.transform.translation.y = number(v[1]);
            t.transform.translation.z = number(v[2]);
            t.transform.rotation.x = number(v[3]);
            t.transform.rotation.y = number(v[4]);
            t.transform.rotation.z = number(v[5]);
            t.transform.rotation.w = number(v[6]);
            core.setTransform(t, "driver", is_static == "1");
        } else if (command == "vel") {
            std::string tracking, observation, reference, point_frame, p[3], time, interval;
            in >> tracking >> observation >> reference >> point_frame >> p[0] >> p[1] >> p[2] >> time >> interval;
            try {
                const auto v = core.lookupVelocity(
                    tracking, observation, reference, tf2::Vector3(number(p[0]), number(p[1]), number(p[2])),
                    point_frame, tf2::TimePoint(std::chrono::nanoseconds(std::stoll(time))),
                    tf2::Duration(std::chrono::nanoseconds(std::stoll(interval))));
                std::cout << "ok " << v.header.stamp.sec << " " << v.header.stamp.nanosec << " "
                          << hex(v.velocity.linear.x) << " " << hex(v.velocity.linear.y) << " "
                          << hex(v.velocity.linear.z) << " " << hex(v.velocity.angular.x) << " "
                          << hex(v.velocity.angular.y) << " " << hex(v.velocity.angular.z) << "\n";
            } catch (const tf2::LookupException&) {
                std::cout << "err LookupException\n";
            } catch (const tf2::ConnectivityException&) {
                std::cout << "err ConnectivityException\n";
            } catch (const tf2::ExtrapolationException&) {
                std::cout << "err ExtrapolationException\n";
            } catch (const tf2::InvalidArgumentException&) {
                std::cout << "err InvalidArgumentException\n";
            } catch (const tf2::TransformException&) {
                std::cout << "err TransformException\n";
            }
        } else if (command == "quit") {
            break;
        }
        std::cout.flush();
    }
    return 0;
}
